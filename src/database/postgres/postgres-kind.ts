import type { DataSource, EntitySubscriberInterface, TransactionStartEvent } from 'typeorm';
import type { DatabaseConfig } from '../../config/configuration';
import { MIGRATIONS } from '../migrations/postgres';
import { isCompatible } from '../migrations/store-migration';
import { StoreCommandError } from '../store-command.error';
import { breakingRefusal, SERVER_RUNNING, type StoreKind } from '../store-kind';
import { BOUNDS, POSTGRES_POOL_WAIT_MS } from './connection';
import { holdPostgresServerLock, serversAbsent, underMigrationLock } from './locks';

/** Every transaction TypeORM starts (operator commands, migrations) gets the same bounds. */
class BoundedTransactions implements EntitySubscriberInterface {
  async afterTransactionStart(event: TransactionStartEvent): Promise<void> {
    // Once per transaction: a nested one is a savepoint of the same transaction.
    if ((event.queryRunner as unknown as { transactionDepth: number }).transactionDepth === 1) {
      await event.queryRunner.query(BOUNDS);
    }
  }
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
    migrations: [...MIGRATIONS],
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
