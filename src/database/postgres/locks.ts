import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { MigrationExecutor, type DataSource, type QueryRunner } from 'typeorm';
import type { DatabaseConfig } from '../../config/configuration';
import type { HeldLock } from '../store-kind';
import { POSTGRES_POOL_WAIT_MS } from './connection';

type PostgresConfig = Extract<DatabaseConfig, { type: 'postgres' }>;

/** Any constant; the same in every instance, so that only one migrates at a time. */
const MIGRATION_LOCK_KEY = 7_135_190_412;

/** Held shared by every running server, exclusively by a command that must not run beside one. */
const SERVER_LOCK_KEY = 7_135_190_413;

const SERVER_LOCK_RETRY_MS = 1_000;
const SERVER_LOCK_TURN_MS = 1_000;

/** Whether no server holds the store; held in turns, so the lock is kept longer than a turn to see a waiting one. */
export async function serversAbsent(runner: QueryRunner): Promise<boolean> {
  const [{ migrated }] = (await runner.query(
    `SELECT to_regclass('"migrations"') IS NOT NULL AND EXISTS (SELECT 1 FROM pg_class WHERE relname = 'plant') AS "migrated"`,
  )) as { migrated: boolean }[];
  const [{ free }] = (await runner.query('SELECT pg_try_advisory_xact_lock($1) AS "free"', [SERVER_LOCK_KEY])) as {
    free: boolean;
  }[];
  if (!free) return false;
  if (!migrated) return true;
  await runner.query('SELECT pg_sleep($1)', [(SERVER_LOCK_TURN_MS + 500) / 1000]);
  const [{ waiting }] = (await runner.query(
    `SELECT count(*)::int AS "waiting" FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 ` +
      'AND ((classid::bigint << 32) | objid::bigint) = $1 AND NOT granted',
    [SERVER_LOCK_KEY],
  )) as { waiting: number }[];
  return waiting === 0;
}

/**
 * Transaction-scoped, so it holds through a transaction pooler and never stays behind; in turns,
 * so a pooler's PAUSE waits one turn at most.
 */
export async function holdPostgresServerLock(database: PostgresConfig): Promise<HeldLock> {
  let stopped = false;
  let client: pg.Client | undefined;
  let wake: (() => void) | undefined;
  const connect = async (): Promise<pg.Client> => {
    const next = new pg.Client({
      connectionString: database.url,
      application_name: 'plant-store-server-lock',
      connectionTimeoutMillis: POSTGRES_POOL_WAIT_MS,
    });
    next.on('error', () => undefined); // the query under way fails too, and is heard there
    await next.connect();
    return next;
  };
  const take = async (on: pg.Client): Promise<void> => {
    await on.query('BEGIN');
    await on.query('SELECT pg_advisory_xact_lock_shared($1)', [SERVER_LOCK_KEY]);
  };
  const turn = async (on: pg.Client): Promise<void> => {
    await take(on);
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, SERVER_LOCK_TURN_MS).unref();
    });
    await on.query('COMMIT');
  };
  const holdOn = async (): Promise<void> => {
    while (!stopped) {
      try {
        client ??= await connect();
        await turn(client);
      } catch {
        const lost = client;
        client = undefined;
        await lost?.end().catch(() => undefined);
        if (!stopped) await sleep(SERVER_LOCK_RETRY_MS);
      }
    }
  };
  client = await connect();
  try {
    await take(client);
    await client.query('COMMIT');
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  const held = holdOn();
  return {
    async release() {
      stopped = true;
      wake?.();
      // Ended first: a turn waiting on a pooler that has no server to give would never return.
      await client?.end().catch(() => undefined);
      await held;
    },
  };
}

/** TypeORM lists applied migrations before any lock: one transaction under an advisory lock instead. */
export async function underMigrationLock<T>(
  dataSource: DataSource,
  work: (executor: MigrationExecutor, runner: QueryRunner) => Promise<T>,
): Promise<T> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.startTransaction();
    await runner.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'none';
    const result = await work(executor, runner);
    await runner.commitTransaction();
    return result;
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  } finally {
    await runner.release();
  }
}
