import { closeSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { DatabaseConfig } from '../../config/configuration';
import { SERVER_RUNNING, type HeldLock, StoreCommandError } from '../store-kind';
import { isSqliteBusy } from './handle';

type SqliteConfig = Extract<DatabaseConfig, { type: 'sqlite' }>;

/** How long opening and migrating wait for another process's lock on the file (the store's, or this one). */
export const OPEN_BUSY_TIMEOUT_MS = 5000;

/**
 * A read transaction on a file beside the store, held while the server runs and dropped by the
 * kernel however it exits; commands take it exclusively. Not the store: it would stop checkpoints.
 */
function openServerLock(database: SqliteConfig, busyTimeoutMs: number): { path: string; lock: Database.Database } {
  const path = `${database.path}.server-lock`;
  closeSync(openSync(path, 'a', 0o600));
  return { path, lock: new Database(path, { timeout: busyTimeoutMs }) };
}

export function sqliteServerLock(database: SqliteConfig): HeldLock {
  if (database.path === ':memory:') return { release: () => Promise.resolve() };
  const { path, lock } = openServerLock(database, OPEN_BUSY_TIMEOUT_MS);
  try {
    lock.exec('BEGIN');
    lock.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (error) {
    lock.close();
    if (isSqliteBusy(error)) {
      throw new Error(`an operator's command holds ${path}; start the server once it is done`, { cause: error });
    }
    throw error;
  }
  return {
    release() {
      lock.close();
      return Promise.resolve();
    },
  };
}

/** `work`, while no server holds the store (and none can start); StoreCommandError(`refusal`) if one does. */
export async function withoutServers<T>(
  database: SqliteConfig,
  work: () => Promise<T>,
  refusal = SERVER_RUNNING,
): Promise<T> {
  if (database.path === ':memory:') return work();
  const { lock } = openServerLock(database, 0);
  try {
    try {
      lock.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      if (isSqliteBusy(error)) throw new StoreCommandError(refusal);
      throw error;
    }
    return await work();
  } finally {
    lock.close();
  }
}
