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
import { ENTITIES } from './entities';
import { CreatePlantStorePostgres1795305600000 } from './migrations/postgres/1795305600000-CreatePlantStore';
import { StoreCommandError } from './store-command.error';
import { isCompatible } from './migrations/store-migration';
import { breakingRefusal, SERVER_RUNNING, type ServerLock, type StoreKind } from './store-kind';
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
 * How long the client waits for any answer of a bounded transaction: the pool wait, the
 * statement bound and a margin for the round trip. Past it the connection is dropped (a
 * PostgreSQL that stopped answering, a network that lost it): the server's own bounds cannot
 * fire on a server that does not run.
 */
const POSTGRES_ANSWER_WAIT_MS = POSTGRES_POOL_WAIT_MS + POSTGRES_STATEMENT_TIMEOUT_MS + 1000;

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
  const [begun, result, committed] = await Promise.allSettled([
    client.query(within({ text: `BEGIN; ${BOUNDS}` }, POSTGRES_POOL_WAIT_MS)),
    client.query<R>(within({ text: query.text, values: query.values }, POSTGRES_ANSWER_WAIT_MS)),
    client.query(within({ text: 'COMMIT' }, POSTGRES_ANSWER_WAIT_MS)),
  ]);
  if (begun.status === 'rejected') throw begun.reason;
  if (result.status === 'rejected') throw result.reason;
  if (committed.status === 'rejected') throw committed.reason;
  return result.value;
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

/**
 * Whether no server holds the store; if none does, none can start until `runner`'s transaction
 * ends (it then holds the server lock exclusively).
 */
async function serversAbsent(runner: QueryRunner): Promise<boolean> {
  const rows = (await runner.query('SELECT pg_try_advisory_xact_lock($1) AS "free"', [SERVER_LOCK_KEY])) as {
    free: boolean;
  }[];
  return rows[0]?.free === true;
}

/**
 * The server's hold on its store: a connection of its own (not one of the pool's) with a
 * transaction left open that holds the shared advisory lock SERVER_LOCK_KEY. Transaction-scoped,
 * so that it holds through a transaction pooler too (which keeps the server connection for the
 * open transaction) and can never stay behind on a pooled connection; it takes no transaction
 * id and holds no snapshot between statements, so it keeps nothing from VACUUM. If the
 * connection is lost, it is taken again, a second later, until the server stops.
 */
async function holdPostgresServerLock(database: PostgresConfig): Promise<ServerLock> {
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const takeAgainLater = (): void => {
    if (stopped || retry !== undefined) return;
    retry = setTimeout(() => {
      retry = undefined;
      take().catch(takeAgainLater);
    }, SERVER_LOCK_RETRY_MS).unref();
  };
  const take = async (): Promise<void> => {
    const next = new pg.Client({
      connectionString: database.url,
      application_name: 'plant-store-server-lock',
      connectionTimeoutMillis: POSTGRES_POOL_WAIT_MS,
    });
    next.on('error', () => undefined); // its end follows, and is heard below
    next.once('end', () => {
      if (client !== next) return;
      client = undefined;
      takeAgainLater();
    });
    try {
      await next.connect();
      await next.query('BEGIN');
      await next.query('SELECT pg_advisory_xact_lock_shared($1)', [SERVER_LOCK_KEY]);
    } catch (error) {
      await next.end().catch(() => undefined);
      throw error;
    }
    if (stopped) await next.end().catch(() => undefined);
    else client = next;
  };
  await take();
  return {
    async release() {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
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
  options: (database) => ({
    type: 'postgres',
    url: database.url,
    poolSize: 10,
    connectTimeoutMS: POSTGRES_POOL_WAIT_MS,
    // No settings as connection parameters: a pooler refuses them, and would share them with
    // others' transactions. Each transaction sets its own bounds (BOUNDS). Pipelining lets a
    // bounded statement cost one round trip.
    extra: { application_name: 'plant-store', pipeline: true },
    entities: ENTITIES,
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
  revert: (dataSource) =>
    underMigrationLock(dataSource, async (executor, runner) => {
      if (!(await serversAbsent(runner))) throw new StoreCommandError(SERVER_RUNNING);
      await executor.undoLastMigration();
    }),
  holdServerLock: holdPostgresServerLock,
  backup: () =>
    Promise.reject(
      new StoreCommandError(
        'a PostgreSQL store is backed up with PostgreSQL\'s own tools: pg_dump --format=custom --file=FILE "$DATABASE_URL" ' +
          '(and restored with pg_restore --dbname "$DATABASE_URL" FILE)',
      ),
    ),
  serve: () => undefined,
};
