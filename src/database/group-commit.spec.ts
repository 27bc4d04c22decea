import { GroupCommit } from './group-commit';
import { StoreOutage } from './store-outage';
import { StoreUnavailableError } from '../errors/store-unavailable.error';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

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

  it('keeps a batch whose store is busy, lets newer items join it, and times out the oldest', async () => {
    const batches: number[][] = [];
    let busyFor = 3;
    const commit = new GroupCommit<number, number>({
      write: (batch) => {
        if (busyFor-- > 0) throw Object.assign(new Error('busy'), { busy: true });
        batches.push([...batch]);
        return [...batch];
      },
      outage: new StoreOutage(),
      busy: {
        isBusy: (error) => (error as { busy?: boolean }).busy === true,
        retryMs: 1,
        maxWaitMs: 5_000,
        timedOut: () => new StoreUnavailableError('locked'),
      },
    });
    const one = commit.enqueue(1);
    await turn();
    const two = commit.enqueue(2);
    await expect(Promise.all([one, two])).resolves.toEqual([1, 2]);
    expect(batches).toEqual([[1, 2]]);

    const expiring = new GroupCommit<number, number>({
      write: () => {
        throw Object.assign(new Error('busy'), { busy: true });
      },
      outage: new StoreOutage(),
      busy: {
        isBusy: () => true,
        retryMs: 1,
        maxWaitMs: 20,
        timedOut: () => new StoreUnavailableError('locked'),
      },
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
