import { jest } from '@jest/globals';
import type { EntityManager } from 'typeorm';
import { StoreUnavailableError } from '../errors/api-error';
import { noMetrics } from '../observability/metrics';
import { GroupCommit, type Store } from './store';
import type { StoreDialect } from './store-kind';
import { StoreOutage } from './store-outage';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
/** What a store that another process holds throws. */
const busyError = (): Error => Object.assign(new Error('busy'), { busy: true });

/** A Store's part that a group commit uses: its transaction runs the work as it is. */
function storeLike(outage = new StoreOutage(noMetrics()), dialect: Partial<StoreDialect> = {}): Store {
  const kind = {
    isBusy: (error: unknown) => (error as { busy?: boolean }).busy === true,
    busyWith: 'another process held the store',
    transactionsAtOnce: 1,
    ...dialect,
  };
  const transaction = <T>(work: (manager: EntityManager) => Promise<T>): Promise<T> => work({} as EntityManager);
  return { dialect: kind, outage, metrics: noMetrics(), tracing: false, transaction } as unknown as Store;
}

const groupCommit = (
  write: (batch: readonly number[]) => Promise<readonly number[]>,
  store = storeLike(),
  size = 1000,
) => new GroupCommit<number, number>(store, write, size);

describe('GroupCommit', () => {
  afterEach(() => jest.useRealTimers());

  it('writes what arrives in one turn as one batch, in arrival order, and answers each', async () => {
    const batches: number[][] = [];
    const commit = groupCommit((batch) => {
      batches.push([...batch]);
      return Promise.resolve(batch.map((n) => n * 10));
    });
    const first = await Promise.all([1, 2, 3].map((n) => commit.add(n)));
    const second = await commit.add(4);
    expect(first).toEqual([10, 20, 30]);
    expect(second).toBe(40);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it('rejects every item of a failed batch, and reports an outage that the next commit ends', async () => {
    const outage = new StoreOutage(noMetrics());
    let fail = true;
    const commit = groupCommit(
      (batch) => (fail ? Promise.reject(new StoreUnavailableError('down')) : Promise.resolve([...batch])),
      storeLike(outage),
    );
    const results = await Promise.allSettled([commit.add(1), commit.add(2)]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(outage.active).toBe(true);
    fail = false;
    await expect(commit.add(3)).resolves.toBe(3);
    expect(outage.active).toBe(false);
  });

  it('answers the items queued behind a batch that found the store unavailable at once, without writing them', async () => {
    const outage = new StoreOutage(noMetrics());
    const written: number[][] = [];
    let fail!: () => void;
    const commit = groupCommit((batch) => {
      written.push([...batch]);
      return new Promise((_, reject) => (fail = () => reject(new StoreUnavailableError('commit waits'))));
    }, storeLike(outage));
    const first = commit.add(1);
    await turn();
    const queued = [commit.add(2), commit.add(3)];
    await turn();
    fail();
    const results = await Promise.allSettled([first, ...queued]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(written).toEqual([[1]]);
    expect(outage.active).toBe(true);
  });

  it('lets queued items try when the failure is news of a store that has since come back', async () => {
    const outage = new StoreOutage(noMetrics());
    outage.failed(new StoreUnavailableError('down'));
    const written: number[][] = [];
    let fail!: () => void;
    const commit = groupCommit(async (batch) => {
      written.push([...batch]);
      if (written.length > 1) return [...batch];
      return new Promise((_, reject) => (fail = () => reject(new StoreUnavailableError('late news'))));
    }, storeLike(outage));
    const first = commit.add(1);
    await turn();
    const queued = commit.add(2);
    await turn();
    outage.recovered();
    fail();
    await expect(first).rejects.toThrow('late news');
    await expect(queued).resolves.toBe(2);
    expect(written).toEqual([[1], [2]]);
    expect(outage.active).toBe(false);
  });

  it('keeps a batch whose store is busy, lets newer items join it, and times out the oldest after 5 s', async () => {
    const batches: number[][] = [];
    let busyFor = 3;
    const commit = groupCommit((batch) => {
      if (busyFor-- > 0) return Promise.reject(busyError());
      batches.push([...batch]);
      return Promise.resolve([...batch]);
    });
    const one = commit.add(1);
    await turn();
    const two = commit.add(2);
    await expect(Promise.all([one, two])).resolves.toEqual([1, 2]);
    expect(batches).toEqual([[1, 2]]);

    jest.useFakeTimers();
    const outage = new StoreOutage(noMetrics());
    const expiring = groupCommit(() => Promise.reject(busyError()), storeLike(outage)).add(1);
    const settled = expiring.catch((error: unknown) => error);
    await jest.advanceTimersByTimeAsync(4_900);
    expect(outage.active).toBe(false);
    await jest.advanceTimersByTimeAsync(200);
    expect(await settled).toEqual(new StoreUnavailableError('another process held the store for 5000 ms'));
    expect(outage.active).toBe(true);
  });

  it('writes at most as many batches at once as the store runs transactions, each of at most maxBatchSize', async () => {
    let inFlight = 0;
    let most = 0;
    const sizes: number[] = [];
    const write = async (batch: readonly number[]): Promise<readonly number[]> => {
      inFlight++;
      most = Math.max(most, inFlight);
      sizes.push(batch.length);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      return [...batch];
    };
    const commit = groupCommit(write, storeLike(undefined, { transactionsAtOnce: 2 }), 10);
    const all = await Promise.all(Array.from({ length: 55 }, (_, i) => commit.add(i)));
    expect(all).toEqual(Array.from({ length: 55 }, (_, i) => i));
    expect(most).toBe(2);
    expect(Math.max(...sizes)).toBe(10);
  });
});
