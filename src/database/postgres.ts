import type { Pool, PoolClient } from 'pg';
import type { DataSource } from 'typeorm';
import { StoreUnavailableError } from './store-unavailable.error';

/**
 * Every statement, and every wait for a lock, ends within this bound; past it PostgreSQL cancels
 * the statement (nothing of it is committed) and the request is answered 503. So is a wait for
 * a free connection in the pool.
 */
export const POSTGRES_STATEMENT_TIMEOUT_MS = 3000;
export const POSTGRES_LOCK_TIMEOUT_MS = 2000;
export const POSTGRES_POOL_WAIT_MS = 3000;

/**
 * SQLSTATE classes and codes that mean "the server cannot answer now": connection exceptions
 * (08), insufficient resources (53), operator intervention (57: shutdown, cancel by our own
 * statement_timeout), lock not available (55P03) and a serialization or deadlock failure (40).
 */
const UNAVAILABLE_SQLSTATE = /^(08|53|57|40)|^55P03$/;
const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * A pg error as the rest of the service should see it. An error that carries a SQLSTATE is the
 * server's answer and is judged by it; one without is the transport failing (refused, reset,
 * terminated, pool timeout), which is unavailability by definition.
 */
export function postgresFailure(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && SQLSTATE.test(code)) {
    return UNAVAILABLE_SQLSTATE.test(code) ? new StoreUnavailableError(`SQLSTATE ${code}`, { cause: error }) : error;
  }
  return new StoreUnavailableError(typeof code === 'string' ? code : 'connection failed', { cause: error });
}

/** The pg pool under a TypeORM DataSource: the hot paths speak to it directly. */
export function postgresPool(dataSource: DataSource): Pool {
  const pool = dataSource.isInitialized ? (dataSource.driver as unknown as { master?: Pool }).master : undefined;
  if (pool === undefined) throw new StoreUnavailableError('the PostgreSQL pool is closed');
  return pool;
}

/** A connection from the pool; failing to get one in time is unavailability. */
export async function postgresClient(dataSource: DataSource): Promise<PoolClient> {
  try {
    return await postgresPool(dataSource).connect();
  } catch (error) {
    throw postgresFailure(error);
  }
}
