/**
 * The store cannot answer right now: a PostgreSQL server that is down, restarting, out of
 * connections or past a statement or lock timeout; a SQLite file locked by another process for
 * longer than the wait, unwritable, or closed. Every store implementation turns its driver's
 * failures of that kind into this one class, so the rest of the service answers 503 (with
 * `Retry-After`) by type, never by reading a message.
 */
export class StoreUnavailableError extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`The store is unavailable: ${reason}`, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * `work`, or a StoreUnavailableError saying `reason` once `ms` have passed without its answer:
 * a store that takes longer is unavailable, whatever it answers later.
 */
export async function answeredWithin<T>(work: Promise<T>, ms: number, reason: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(reason)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
