import {
  type DataSource,
  type EntitySubscriberInterface,
  EventSubscriber,
  QueryFailedError,
  type TransactionStartEvent,
} from 'typeorm';
import type { DatabaseConfig } from '../../config/configuration';
import {
  breakingRefusal,
  isCompatible,
  migrationFiles,
  SERVER_RUNNING,
  StoreCommandError,
  type StoreKind,
} from '../store-kind';
import { StoreCheck } from '../store-outage';
import { answeredWithin, StoreUnavailableError } from '../../errors/api-error';
import {
  BOUNDS,
  POSTGRES_ANSWER_WAIT_MS,
  POSTGRES_COMMIT_WAIT_MS,
  POSTGRES_POOL_WAIT_MS,
  postgresFailure,
} from './connection';
import { holdPostgresServerLock, serversAbsent, underMigrationLock } from './locks';

/**
 * Every transaction TypeORM starts gets the same bounds (TypeORM loads only a decorated subscriber).
 * Not waited for: in pipeline mode the next statement follows at once, and a failed SET fails it.
 */
@EventSubscriber()
class BoundedTransactions implements EntitySubscriberInterface {
  afterTransactionStart(event: TransactionStartEvent): void {
    event.queryRunner.query(BOUNDS).catch(() => undefined);
  }
}

function redact(url: string): string {
  const parsed = URL.parse(url);
  if (parsed === null) return 'the configured URL';
  if (parsed.password !== '') parsed.password = '***';
  return parsed.toString();
}

/** Names and tags are any Unicode: a database that is not UTF-8 could not keep an emoji. */
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
  options: (database, entities) => ({
    type: 'postgres',
    url: database.url,
    poolSize: 10,
    connectTimeoutMS: POSTGRES_POOL_WAIT_MS,
    // No settings as connection parameters (a transaction pooler refuses them): each transaction
    // sets its own bounds. Pipeline mode: TypeORM's schema reads send several queries at once.
    extra: { application_name: 'plant-store', pipeline: true },
    entities,
    subscribers: [BoundedTransactions],
    migrations: [migrationFiles('postgres')],
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
  }),
  describe: (database) => `PostgreSQL at ${redact(database.url)}`,
  // A write waits on another's locks within its bounds (lock_timeout: 503 past them); an id another
  // instance takes meanwhile is skipped by the insert and read.
  isBusy: () => false,
  busyWith: 'other writers kept the rows locked',
  failure: postgresFailure,
  transactionsAtOnce: 8,
  readsInTransaction: true,
  answerWaitMs: POSTGRES_ANSWER_WAIT_MS,
  commitWaitMs: POSTGRES_COMMIT_WAIT_MS,
  beforeConnect: () => undefined,
  check: assertUtf8Database,
  migrate: async (dataSource) =>
    (
      await underMigrationLock(dataSource, async (executor, runner) => {
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
  serve: () => Promise.resolve(),
  storeCheck: (dataSource) => new PostgresStoreCheck(dataSource),
};

/** Without writing a table: the locks and rights a create needs, read-only or not, and a WAL record to commit as a create does. */
const LOCKS = ['LOCK TABLE "plant" IN ROW EXCLUSIVE MODE NOWAIT', 'LOCK TABLE "api_token" IN ACCESS SHARE MODE NOWAIT'];
const CHECK =
  `SELECT current_setting('transaction_read_only') AS "readOnly", ` +
  `has_table_privilege('"plant"', 'INSERT') AND has_table_privilege('"plant"', 'SELECT') ` +
  `AND has_table_privilege('"api_token"', 'SELECT') AS "mayWrite", ` +
  `pg_logical_emit_message(true, 'plant-store', 'health check') IS NOT NULL AS "committing"`;
type CheckRow = { readOnly: string; mayWrite: boolean };

export class PostgresStoreCheck extends StoreCheck {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async ready(): Promise<void> {
    const check = this.dataSource.transaction(async (manager) => {
      for (const lock of LOCKS) await manager.query(lock);
      return (await manager.query<CheckRow[]>(CHECK))[0];
    });
    let row: CheckRow | undefined;
    try {
      row = await answeredWithin(check, POSTGRES_ANSWER_WAIT_MS, `no answer within ${POSTGRES_ANSWER_WAIT_MS} ms`);
    } catch (error) {
      throw postgresFailure(error instanceof QueryFailedError ? error.driverError : error);
    }
    if (row?.readOnly !== 'off') throw new StoreUnavailableError('the database is read-only');
    if (row.mayWrite !== true) throw new StoreUnavailableError('the user may not write the tables (SQLSTATE 42501)');
  }

  takesWrites(): Promise<void> {
    return this.ready();
  }
}
