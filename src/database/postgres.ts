import type { Pool, PoolClient } from 'pg';
import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import { ENTITIES } from './entities';
import { CreatePlantStorePostgres1795305600000 } from './migrations/postgres/1795305600000-CreatePlantStore';
import type { StoreKind } from './store-kind';
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

/** Any constant; the same in every instance, so that only one migrates at a time. */
const MIGRATION_LOCK_KEY = 7_135_190_412;

/** A URL fit for a log line: no password. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the configured URL';
  }
}

/**
 * Refuses a database whose encoding is not UTF-8: names and tags are any Unicode text, and a
 * LATIN1 (or SQL_ASCII) database cannot keep, say, an emoji; one such create would fail the whole
 * batch it was committed in. Checked once, when the store is opened.
 */
async function assertUtf8Database(dataSource: DataSource): Promise<void> {
  const rows: { server_encoding: string }[] = await dataSource.query('SHOW server_encoding');
  const encoding = rows[0]?.server_encoding ?? 'unknown';
  if (encoding.toUpperCase() !== 'UTF8') {
    throw new Error(
      `the database's encoding is ${encoding}, and the service stores text as UTF-8: ` +
        `use a database created with ENCODING 'UTF8' (createdb -E UTF8 -T template0 NAME)`,
    );
  }
}

type PostgresConfig = Extract<DatabaseConfig, { type: 'postgres' }>;

/** PostgreSQL: a pool of 10 connections, every statement and lock wait bounded by the server. */
export const POSTGRES: StoreKind<PostgresConfig> = {
  options: (database) => ({
    type: 'postgres',
    url: database.url,
    poolSize: 10,
    connectTimeoutMS: POSTGRES_POOL_WAIT_MS,
    // Sent as connection parameters: every statement and lock wait on these connections is
    // bounded by the server itself, so a hung statement is cancelled, never committed late.
    extra: {
      statement_timeout: POSTGRES_STATEMENT_TIMEOUT_MS,
      lock_timeout: POSTGRES_LOCK_TIMEOUT_MS,
      idle_in_transaction_session_timeout: POSTGRES_STATEMENT_TIMEOUT_MS * 2,
      application_name: 'plant-store',
    },
    entities: ENTITIES,
    migrations: [CreatePlantStorePostgres1795305600000],
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
  }),
  describe: (database) => `PostgreSQL at ${redact(database.url)}`,
  beforeConnect: () => undefined,
  check: assertUtf8Database,
  /**
   * TypeORM reads the list of applied migrations before it takes any lock, so two processes
   * could both try to apply the same one: an advisory lock serialises them.
   */
  async migrate(dataSource) {
    const lock = dataSource.createQueryRunner();
    try {
      await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
      await lock.release();
    }
  },
  serve: () => undefined,
};
