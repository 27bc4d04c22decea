import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { ApiToken } from '../auth/api-token.entity';
import type { DatabaseConfig } from '../config/configuration';
import { Plant } from '../plants/plant.entity';
import { runMigrationsSafely } from './migrate';
import { CreatePlantStore1795305600000 } from './migrations/1795305600000-CreatePlantStore';
import { isSqliteBusy, nativeSqlite } from './sqlite';
import { POSTGRES_LOCK_TIMEOUT_MS, POSTGRES_POOL_WAIT_MS, POSTGRES_STATEMENT_TIMEOUT_MS } from './postgres';

export const ENTITIES = [Plant, ApiToken];
export const MIGRATIONS = [CreatePlantStore1795305600000];

/**
 * Who opens the store. Both wait up to 5 s for another process's SQLite lock while opening and
 * migrating (several instances may start on one fresh file at once). Then the server stops
 * waiting in SQLite's busy handler, which would block the event loop: its connection's busy
 * timeout becomes 0, and the plant store waits for the lock asynchronously instead. The operator
 * commands may simply block.
 */
export type StoreClient = 'server' | 'command';

const OPEN_SQLITE_BUSY_TIMEOUT_MS = 5000;

/** How often switching a fresh file to WAL is tried again while another process writes it. */
const WAL_SWITCH_RETRY_MS = 5;

/**
 * Durability: WAL with synchronous=FULL fsyncs the log on every commit, so a create that was
 * answered 200 survives a crash of the process or of the machine. (NORMAL would only survive
 * a crash of the process.)
 *
 * Switching a fresh file to WAL fails at once with SQLITE_BUSY, without SQLite's busy handler,
 * while another process holds its write lock (it would deadlock otherwise): the case of several
 * workers or instances starting on one new file. So it is tried again here, as the migrations
 * are, until the same deadline as every other lock wait while opening.
 */
async function prepareSqlite(db: Database.Database): Promise<void> {
  if (db.memory) return;
  const deadline = Date.now() + OPEN_SQLITE_BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      break;
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() >= deadline) throw error;
      await sleep(WAL_SWITCH_RETRY_MS);
    }
  }
  db.pragma('synchronous = FULL');
}

/**
 * The store holds every token hash and plant, so its files are the owner's alone: the folder is
 * made 0700 and the file 0600 before SQLite opens it (SQLite gives the -wal and -shm files the
 * database file's mode).
 */
function createPrivateFile(path: string): void {
  if (path === ':memory:') return;
  makeDirectory(dirname(path));
  closeSync(openSync(path, 'a', 0o600));
}

/**
 * `mkdir -p`, one level at a time. Node's own `mkdirSync(…, { recursive: true })` never returns
 * under a path such as /proc, where mkdir keeps failing with ENOENT: it retries forever.
 */
function makeDirectory(path: string): void {
  if (existsSync(path)) return;
  const parent = dirname(path);
  if (parent !== path) makeDirectory(parent);
  mkdirSync(path, { mode: 0o700 });
}

/**
 * The one description of the store, shared by the Nest app, the operator commands and the
 * TypeORM CLI. Schema changes happen only through the migrations, which run on start
 * (`openDataSource`); never `synchronize`.
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
    return {
      ...common,
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
    };
  }
  return {
    ...common,
    type: 'better-sqlite3',
    database: database.path,
    timeout: OPEN_SQLITE_BUSY_TIMEOUT_MS,
    prepareDatabase: prepareSqlite,
  };
}

/** The store named by DATABASE_URL could not be opened; the message is the operator's one line. */
export class StoreOpenError extends Error {
  constructor(database: DatabaseConfig, cause: unknown) {
    const where = database.type === 'sqlite' ? `SQLite file ${database.path}` : `PostgreSQL at ${redact(database.url)}`;
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`DATABASE_URL: cannot open the ${where}: ${reason}`, { cause });
    this.name = 'StoreOpenError';
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
 * Connects and applies pending migrations: what the server and the operator commands do first.
 * Fails fast (no retries: a wrong DATABASE_URL does not become right by waiting) with a
 * StoreOpenError that names DATABASE_URL and the cause.
 */
export async function openDataSource(database: DatabaseConfig, client: StoreClient = 'command'): Promise<DataSource> {
  let dataSource: DataSource | undefined;
  try {
    if (database.type === 'sqlite') createPrivateFile(database.path);
    dataSource = await new DataSource(dataSourceOptions(database)).initialize();
    await runMigrationsSafely(dataSource);
    if (client === 'server' && database.type === 'sqlite') nativeSqlite(dataSource).pragma('busy_timeout = 0');
    return dataSource;
  } catch (error) {
    if (dataSource?.isInitialized) await dataSource.destroy().catch(() => undefined);
    throw new StoreOpenError(database, error);
  }
}
