import type Database from 'better-sqlite3';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { ApiToken } from '../auth/api-token.entity';
import type { DatabaseConfig } from '../config/configuration';
import { Plant } from '../plants/plant.entity';
import { runMigrationsSafely } from './migrate';
import { CreatePlantStore1795305600000 } from './migrations/1795305600000-CreatePlantStore';

export const ENTITIES = [Plant, ApiToken];
export const MIGRATIONS = [CreatePlantStore1795305600000];

/** How long a writer waits for another process's lock on the SQLite file before giving up. */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

/**
 * Durability: WAL with synchronous=FULL fsyncs the log on every commit, so a create that was
 * answered 200 survives a crash of the process or of the machine. (NORMAL would only survive
 * a crash of the process.)
 */
function prepareSqlite(db: Database.Database): void {
  if (db.memory) return;
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
}

/**
 * The one description of the store, shared by the Nest app, the token CLI and the TypeORM CLI.
 * Schema changes happen only through the migrations, which run on start (`openDataSource`);
 * never `synchronize`.
 */
export function dataSourceOptions(database: DatabaseConfig): DataSourceOptions {
  const common = {
    entities: ENTITIES,
    migrations: MIGRATIONS,
    // Run by `runMigrationsSafely` right after connecting, not by TypeORM's own migrationsRun.
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
  } as const;
  if (database.type === 'postgres') {
    return { ...common, type: 'postgres', url: database.url, poolSize: 10, connectTimeoutMS: 5000 };
  }
  return {
    ...common,
    type: 'better-sqlite3',
    database: database.path,
    timeout: SQLITE_BUSY_TIMEOUT_MS,
    prepareDatabase: prepareSqlite,
  };
}

/** Connects and applies pending migrations: what the server and the token CLI do first. */
export async function openDataSource(options: DataSourceOptions): Promise<DataSource> {
  const dataSource = await new DataSource(options).initialize();
  try {
    await runMigrationsSafely(dataSource);
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}
