import DataLoader from 'dataloader';

/**
 * Look-ups that arrive in one turn of the event loop share one query (DataLoader), with each
 * distinct key asked once. Nothing is cached between turns: every request still reads the store
 * as it is when its turn's query runs, so a revocation counts from the next request on.
 */
export function lookupBatcher<K extends string, V>(
  loadMany: (keys: readonly K[]) => Promise<ReadonlyMap<K, V>>,
): (key: K) => Promise<V | undefined> {
  const loader = new DataLoader<K, V | undefined>(
    async (keys) => {
      const found = await loadMany([...new Set(keys)]);
      return keys.map((key) => found.get(key));
    },
    { cache: false, batchScheduleFn: (callback) => setImmediate(callback) },
  );
  return (key) => loader.load(key);
}
