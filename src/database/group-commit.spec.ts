import { GroupCommit, type GroupCommitOptions } from './group-commit';
import { StoreOutage } from './store-outage';
import { StoreUnavailableError } from '../errors/api-error';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
/** What a store that another process holds throws. */
const busyError = (): Error => Object.assign(new Error('busy'), { busy: true });

/** GroupCommit's `busy` option for such a store: retried every `retryMs`, waited for `maxWaitMs` at most. */
function waitingWhileBusy(retryMs: number, maxWaitMs: number): GroupCommitOptions<number, number>['busy'] {
  return {
    isBusy: (error) => (error as { busy?: boolean }).busy === true,
    retryMs,
    maxWaitMs,
    timedOut: () => new StoreUnavailableError('locked'),
  };
}

describe('GroupCommit', () => {
  it('writes what arrives in one turn as one batch, in arrival order, and answers each', async () => {
    const batches: number[][] = [];
    const commit = new GroupCommit<number, number>({
      write: (batch) => {
        batches.push([...batch]);
        return batch.map((n) => n * 10);
      },
      outage: new StoreOutage(),
    });
    const first = await Promise.all([1, 2, 3].map((n) => commit.enqueue(n)));
    const second = await commit.enqueue(4);
    expect(first).toEqual([10, 20, 30]);
    expect(second).toBe(40);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it('rejects every item of a failed batch, and reports an outage that the next commit ends', async () => {
    const outage = new StoreOutage();
    let fail = true;
    const commit = new GroupCommit<number, number>({
      write: (batch) => {
        if (fail) throw new StoreUnavailableError('down');
        return [...batch];
      },
      outage,
    });
    const results = await Promise.allSettled([commit.enqueue(1), commit.enqueue(2)]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(outage.active).toBe(true);
    fail = false;
    await expect(commit.enqueue(3)).resolves.toBe(3);
    expect(outage.active).toBe(false);
  });

  it('answers the items queued behind a batch that found the store unavailable at once, without writing them', async () => {
    const outage = new StoreOutage();
    const written: number[][] = [];
    let fail!: () => void;
    const commit = new GroupCommit<number, number>({
      write: (batch) => {
        written.push([...batch]);
        return new Promise((_, reject) => (fail = () => reject(new StoreUnavailableError('commit waits'))));
      },
      outage,
    });
    const first = commit.enqueue(1);
    await turn();
    const queued = [commit.enqueue(2), commit.enqueue(3)];
    await turn();
    fail();
    const results = await Promise.allSettled([first, ...queued]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(written).toEqual([[1]]);
    expect(outage.active).toBe(true);
  });

  it('lets queued items try when the failure is news of a store that has since come back', async () => {
    const outage = new StoreOutage();
    outage.failed(new StoreUnavailableError('down'));
    const written: number[][] = [];
    let fail!: () => void;
    const commit = new GroupCommit<number, number>({
      write: (batch) => {
        written.push([...batch]);
        if (written.length > 1) return [...batch];
        return new Promise((_, reject) => (fail = () => reject(new StoreUnavailableError('late news'))));
      },
      outage,
    });
    const first = commit.enqueue(1);
    await turn();
    const queued = commit.enqueue(2);
    await turn();
    outage.recovered();
    fail();
    await expect(first).rejects.toThrow('late news');
    await expect(queued).resolves.toBe(2);
    expect(written).toEqual([[1], [2]]);
    expect(outage.active).toBe(false);
  });

  it('keeps a batch whose store is busy, lets newer items join it, and times out the oldest', async () => {
    const batches: number[][] = [];
    let busyFor = 3;
    const commit = new GroupCommit<number, number>({
      write: (batch) => {
        if (busyFor-- > 0) throw busyError();
        batches.push([...batch]);
        return [...batch];
      },
      outage: new StoreOutage(),
      busy: waitingWhileBusy(1, 5_000),
    });
    const one = commit.enqueue(1);
    await turn();
    const two = commit.enqueue(2);
    await expect(Promise.all([one, two])).resolves.toEqual([1, 2]);
    expect(batches).toEqual([[1, 2]]);

    const expiring = new GroupCommit<number, number>({
      write: () => {
        throw busyError();
      },
      outage: new StoreOutage(),
      busy: waitingWhileBusy(1, 20),
    });
    await expect(expiring.enqueue(1)).rejects.toThrow('locked');
  });

  it('writes at most maxInFlight batches of at most maxBatchSize at once', async () => {
    let inFlight = 0;
    let most = 0;
    const sizes: number[] = [];
    const commit = new GroupCommit<number, number>({
      write: async (batch) => {
        inFlight++;
        most = Math.max(most, inFlight);
        sizes.push(batch.length);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        return [...batch];
      },
      outage: new StoreOutage(),
      maxBatchSize: 10,
      maxInFlight: 2,
    });
    const all = await Promise.all(Array.from({ length: 55 }, (_, i) => commit.enqueue(i)));
    expect(all).toEqual(Array.from({ length: 55 }, (_, i) => i));
    expect(most).toBe(2);
    expect(Math.max(...sizes)).toBe(10);
  });
});
