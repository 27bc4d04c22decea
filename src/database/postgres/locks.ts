import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { MigrationExecutor, type DataSource, type QueryRunner } from 'typeorm';
import type { DatabaseConfig } from '../../config/configuration';
import type { ServerLock } from '../store-kind';
import { POSTGRES_POOL_WAIT_MS } from './connection';

type PostgresConfig = Extract<DatabaseConfig, { type: 'postgres' }>;

/** Any constant; the same in every instance, so that only one migrates at a time. */
const MIGRATION_LOCK_KEY = 7_135_190_412;

/** Held shared by every running server, exclusively by a command that must not run beside one. */
const SERVER_LOCK_KEY = 7_135_190_413;

/** After the server's lock connection is lost (a restart, a failover), how soon it is taken again. */
const SERVER_LOCK_RETRY_MS = 1_000;

/** How long each of a server's turns holding its lock lasts (see holdPostgresServerLock). */
const SERVER_LOCK_TURN_MS = 1_000;

/**
 * Whether no server holds the store (see holdPostgresServerLock); if none does, none can take its
 * lock until `runner`'s transaction ends, as this one then holds it exclusively. A server holds
 * its lock in turns of SERVER_LOCK_TURN_MS with a moment between them, so the lock being free
 * proves nothing at once: the exclusive lock is held for longer than a turn, and any server is
 * then seen waiting for it. A store with no migration applied has had no server: no wait.
 */
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
 * The server's hold on its store: on a connection of its own (not one of the pool's), the shared
 * advisory lock SERVER_LOCK_KEY, taken in a transaction that is held for SERVER_LOCK_TURN_MS and
 * committed, then again, for as long as the server runs. Transaction-scoped, so that it holds
 * through a transaction pooler too and can never stay behind on a pooled connection; in turns,
 * so that a pooler's PAUSE or safe shutdown (which wait for every transaction to end) wait a
 * turn at most; it takes no transaction id and holds no snapshot, so it keeps nothing from
 * VACUUM. If the connection is lost, it is made again a second later, until the server stops.
 */
export async function holdPostgresServerLock(database: PostgresConfig): Promise<ServerLock> {
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
  // The first turn is taken before the server starts; the others follow on their own.
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

/**
 * TypeORM reads the list of applied migrations before it takes any lock, so two processes
 * could both try to apply the same one. Here the whole run is one transaction that first takes
 * a transaction-scoped advisory lock (a session-scoped one would not survive a transaction
 * pooler): the second process waits for the first to commit, then finds nothing left to do.
 */
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
