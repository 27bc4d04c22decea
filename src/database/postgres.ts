import { setTimeout as sleep } from 'node:timers/promises';
import pg, {
  DatabaseError,
  type Pool,
  type PoolClient,
  type QueryConfig,
  type QueryResult,
  type QueryResultRow,
} from 'pg';
import {
  type DataSource,
  type EntitySubscriberInterface,
  MigrationExecutor,
  type QueryRunner,
  type TransactionStartEvent,
} from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import { CreatePlantStorePostgres1795305600000 } from './migrations/postgres/1795305600000-CreatePlantStore';
import { StoreCommandError } from './store-command.error';
import { isCompatible } from './migrations/store-migration';
import { breakingRefusal, SERVER_RUNNING, type ServerLock, type StoreKind } from './store-kind';
import { answeredWithin, StoreUnavailableError } from '../errors/store-unavailable.error';

/**
 * Every statement, and every wait for a lock, ends within this bound; past it PostgreSQL cancels
 * the statement (nothing of it is committed) and the request is answered 503. So is a wait for
 * a free connection in the pool.
 */
export const POSTGRES_STATEMENT_TIMEOUT_MS = 3000;
export const POSTGRES_LOCK_TIMEOUT_MS = 2000;
export const POSTGRES_POOL_WAIT_MS = 3000;
/**
 * How long the client waits for any answer of a bounded transaction: the pool wait, the
 * statement bound and a margin for the round trip. Past it the connection is dropped (a
 * PostgreSQL that stopped answering, a network that lost it): the server's own bounds cannot
 * fire on a server that does not run.
 */
const POSTGRES_ANSWER_WAIT_MS = POSTGRES_POOL_WAIT_MS + POSTGRES_STATEMENT_TIMEOUT_MS + 1000;

/**
 * A `COMMIT` that has not returned this long after its statement finished is given up (503) and
 * its connection dropped. PostgreSQL stops a statement's timeout before the commit, so nothing
 * of its own bounds a commit that waits for a synchronous standby. Its backend waits on until
 * the standby answers, and the commit then stands, as with a connection lost during it: a retry
 * of the same plant answers 200. (A cancel would end that wait directly, but PgBouncer 1.18 in
 * transaction mode stopped serving the database after one.)
 */
export const POSTGRES_COMMIT_WAIT_MS = POSTGRES_STATEMENT_TIMEOUT_MS;

/**
 * SQLSTATE classes and codes that mean "the store cannot take a create now", as opposed to a bug
 * of ours: connection exceptions (08), a read-only transaction (25: a standby, or a pooler
 * pointed at one after a failover), authorization and catalog failures (28, 3D, 3F: a password
 * rotated, the database dropped), a serialization or deadlock failure (40), insufficient
 * resources (53: a full disk, too many connections), objects in use or locked (55), operator
 * intervention (57: shutdown, cancel by our own statement_timeout), system and internal errors
 * (58, XX: I/O, corruption), and a schema the service cannot use: insufficient privilege
 * (42501), a missing table or column (42P01, 42703).
 */
const UNAVAILABLE_SQLSTATE = /^(08|25|28|3D|3F|40|53|55|57|58|XX)|^(42501|42P01|42703)$/;

/**
 * A pg error as the rest of the service should see it. The server's answer (a DatabaseError,
 * with its SQLSTATE) is judged by its SQLSTATE; anything else is the connection failing
 * (refused, reset, a broken pipe, terminated, a pool timeout, no answer in time), which is
 * unavailability by definition. The class decides, not the code's shape: `EPIPE` is five
 * capitals too.
 */
export function postgresFailure(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (error instanceof DatabaseError) {
    const code = error.code ?? '';
    return UNAVAILABLE_SQLSTATE.test(code) ? new StoreUnavailableError(`SQLSTATE ${code}`, { cause: error }) : error;
  }
  const code = (error as { code?: unknown } | null)?.code;
  return new StoreUnavailableError(typeof code === 'string' ? code : 'connection failed', { cause: error });
}

/** The connection itself failed (not the server's answer): it is discarded, never reused. */
export function isTransportFailure(error: unknown): boolean {
  return !(error instanceof DatabaseError);
}

/** The pg pool under a TypeORM DataSource: the hot paths speak to it directly. */
export function postgresPool(dataSource: DataSource): Pool {
  const pool = dataSource.isInitialized ? (dataSource.driver as unknown as { master?: Pool }).master : undefined;
  if (pool === undefined) throw new StoreUnavailableError('the PostgreSQL pool is closed');
  return pool;
}

const heard = new WeakSet<PoolClient>();

/** A connection from the pool; failing to get one in time is unavailability. */
export async function postgresClient(dataSource: DataSource): Promise<PoolClient> {
  let client: PoolClient;
  try {
    client = await postgresPool(dataSource).connect();
  } catch (error) {
    throw postgresFailure(error);
  }
  // A connection that fails while checked out (its server, or a pooler in between, gone) also
  // emits 'error', which the pool listens to only while the connection is idle; unheard, it
  // would end the process. Its queries reject with the failure, and the pool drops it on release.
  if (!heard.has(client)) {
    heard.add(client);
    client.on('error', () => undefined);
  }
  return client;
}

/**
 * `work` on a connection from the pool, which goes back to it afterwards, or is discarded when
 * the connection itself failed; a failure comes out as `postgresFailure` sees it.
 */
export async function withPooledClient<T>(
  dataSource: DataSource,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await postgresClient(dataSource);
  let broken = false;
  try {
    return await work(client);
  } catch (error) {
    broken = isTransportFailure(error);
    throw postgresFailure(error);
  } finally {
    client.release(broken);
  }
}

/**
 * The bounds, set for one transaction (SET LOCAL). They end with it, so they hold the same
 * directly and through a transaction pooler (PgBouncer, RDS Proxy, Neon's and Supabase's pooled
 * endpoints), which hands each transaction whichever server connection is free and refuses
 * them as connection parameters.
 */
const BOUNDS =
  `SET LOCAL statement_timeout = ${POSTGRES_STATEMENT_TIMEOUT_MS}; ` +
  `SET LOCAL lock_timeout = ${POSTGRES_LOCK_TIMEOUT_MS}; ` +
  `SET LOCAL idle_in_transaction_session_timeout = ${POSTGRES_STATEMENT_TIMEOUT_MS * 2}`;

/** pg reads `query_timeout` from a query's own config too; its types declare it for the client only. */
function within(query: QueryConfig, ms: number): QueryConfig {
  return Object.assign(query, { query_timeout: ms });
}

/**
 * Runs one statement in a transaction the server bounds: `BEGIN` with the bounds, the
 * statement, `COMMIT`, pipelined on one connection (one round trip). Rejects if any of the
 * three fails; a statement that failed leaves nothing (its `COMMIT` rolls back), and a `COMMIT`
 * that failed leaves the outcome unknown, which the caller reports as unavailability. The
 * statement is unnamed: a named one belongs to one server connection, which a pooler does not
 * keep for the next transaction.
 *
 * A connection from our pool to a pooler is not yet a connection to PostgreSQL: a paused
 * PgBouncer, one retrying its login to a restarted server, or a session pool with none free,
 * holds `BEGIN` before PostgreSQL sees it, where none of the server's bounds can start. So the
 * client bounds the wait itself: no answer to `BEGIN` within POSTGRES_POOL_WAIT_MS, or to the
 * rest within POSTGRES_ANSWER_WAIT_MS, and pg drops the connection (the caller releases it as
 * broken): the request is answered 503, and nothing of it was committed.
 */
export async function boundedQuery<R extends QueryResultRow>(
  client: PoolClient,
  query: QueryConfig,
): Promise<QueryResult<R>> {
  // Sent in this order, on one connection.
  const begin = client.query(within({ text: `BEGIN; ${BOUNDS}` }, POSTGRES_POOL_WAIT_MS));
  const statement = client.query<R>(within({ text: query.text, values: query.values }, POSTGRES_ANSWER_WAIT_MS));
  const [begun, result, committed] = await Promise.allSettled([begin, statement, commitWithin(client, statement)]);
  if (begun.status === 'rejected') throw begun.reason;
  if (result.status === 'rejected') throw result.reason;
  if (committed.status === 'rejected') throw committed.reason;
  return result.value;
}

/**
 * `COMMIT` on `client`, given up when it has not returned POSTGRES_COMMIT_WAIT_MS after `after`,
 * the statement before it, settled.
 */
function commitWithin(client: PoolClient, after: Promise<unknown>): Promise<unknown> {
  const committed = client.query(within({ text: 'COMMIT' }, POSTGRES_ANSWER_WAIT_MS));
  // What the commit says once it was given up is of no one's concern.
  committed.catch(() => undefined);
  const settled = after.then(
    () => undefined,
    () => undefined,
  );
  return settled.then(() =>
    answeredWithin(
      committed,
      POSTGRES_COMMIT_WAIT_MS,
      `the commit did not complete within ${POSTGRES_COMMIT_WAIT_MS} ms (waiting for a synchronous standby?)`,
    ),
  );
}

/** Every transaction TypeORM starts (operator commands, migrations) gets the same bounds. */
class BoundedTransactions implements EntitySubscriberInterface {
  async afterTransactionStart(event: TransactionStartEvent): Promise<void> {
    // Once per transaction: a nested one is a savepoint of the same transaction.
    if ((event.queryRunner as unknown as { transactionDepth: number }).transactionDepth === 1) {
      await event.queryRunner.query(BOUNDS);
    }
  }
}

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
async function serversAbsent(runner: QueryRunner): Promise<boolean> {
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
async function holdPostgresServerLock(database: PostgresConfig): Promise<ServerLock> {
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

/**
 * TypeORM reads the list of applied migrations before it takes any lock, so two processes
 * could both try to apply the same one. Here the whole run is one transaction that first takes
 * a transaction-scoped advisory lock (a session-scoped one would not survive a transaction
 * pooler): the second process waits for the first to commit, then finds nothing left to do.
 */
async function underMigrationLock<T>(
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

type PostgresConfig = Extract<DatabaseConfig, { type: 'postgres' }>;

/** PostgreSQL: a pool of 10 connections, every statement and lock wait bounded by the server. */
export const POSTGRES: StoreKind<PostgresConfig> = {
  options: (database, entities) => ({
    type: 'postgres',
    url: database.url,
    poolSize: 10,
    connectTimeoutMS: POSTGRES_POOL_WAIT_MS,
    // No settings as connection parameters: a pooler refuses them, and would share them with
    // others' transactions. Each transaction sets its own bounds (BOUNDS). Pipelining lets a
    // bounded statement cost one round trip.
    extra: { application_name: 'plant-store', pipeline: true },
    entities: [...entities],
    subscribers: [BoundedTransactions],
    migrations: [CreatePlantStorePostgres1795305600000],
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
  }),
  describe: (database) => `PostgreSQL at ${redact(database.url)}`,
  beforeConnect: () => undefined,
  check: assertUtf8Database,
  migrate: async (dataSource) =>
    (
      await underMigrationLock(dataSource, async (executor, runner) => {
        // Under the migration lock: what another process applied meanwhile is no longer pending.
        const breaking = (await executor.getPendingMigrations()).find((migration) => !isCompatible(migration.name));
        if (breaking !== undefined && !(await serversAbsent(runner))) {
          throw new StoreCommandError(breakingRefusal(breaking.name));
        }
        return executor.executePendingMigrations();
      })
    ).map((migration) => migration.name),
  revert: (dataSource, _database, approve) =>
    underMigrationLock(dataSource, async (executor, runner) => {
      if (!(await serversAbsent(runner))) throw new StoreCommandError(SERVER_RUNNING);
      await approve(runner);
      await executor.undoLastMigration();
    }),
  holdServerLock: holdPostgresServerLock,
  backup: () =>
    Promise.reject(
      new StoreCommandError(
        'a PostgreSQL store is backed up with PostgreSQL\'s own tools: pg_dump --format=custom --file=FILE "$DATABASE_URL" ' +
          '(and restored, every instance stopped, with pg_restore --clean --if-exists --single-transaction --dbname "$DATABASE_URL" FILE)',
      ),
    ),
  serve: () => undefined,
};
