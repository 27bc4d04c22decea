import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { MigrationExecutor } from 'typeorm';
import type { DatabaseConfig } from '../../config/configuration';
import { MIGRATIONS } from '../migrations/sqlite';
import { isCompatible } from '../migrations/store-migration';
import { StoreCommandError } from '../store-command.error';
import { breakingRefusal, type StoreKind } from '../store-kind';
import { backupSqlite } from './backup';
import { isSqliteBusy, nativeSqlite } from './handle';
import { OPEN_BUSY_TIMEOUT_MS, sqliteServerLock, withoutServers } from './server-lock';

/** How often a start looks again at the pending migrations while another process applies them. */
const MIGRATION_LOOK_AGAIN_MS = 50;

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
async function useWal(db: Database.Database): Promise<void> {
  if (db.memory) return;
  const deadline = Date.now() + OPEN_BUSY_TIMEOUT_MS;
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
 * `mkdir -p` with mode 0700, one level at a time. Node's own `mkdirSync(…, { recursive: true })`
 * never returns under a path such as /proc, where mkdir keeps failing with ENOENT.
 */
function makeDirectory(path: string): void {
  if (existsSync(path)) return;
  const parent = dirname(path);
  if (parent !== path) makeDirectory(parent);
  mkdirSync(path, { mode: 0o700 });
}

type SqliteConfig = Extract<DatabaseConfig, { type: 'sqlite' }>;

/**
 * SQLite: one file (and its -wal and -shm), WAL with synchronous=FULL. Opening and migrating
 * wait up to 5 s for another process's lock (several instances may start on one fresh file at
 * once); then the server stops waiting in SQLite's busy handler, which would block the event
 * loop: its connection's busy timeout becomes 0, and the plant store waits asynchronously.
 */
export const SQLITE: StoreKind<SqliteConfig> = {
  options: (database, entities) => ({
    type: 'better-sqlite3',
    database: database.path,
    timeout: OPEN_BUSY_TIMEOUT_MS,
    prepareDatabase: useWal,
    entities: [...entities],
    migrations: [...MIGRATIONS],
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
  }),
  describe: (database) => `SQLite file ${database.path}`,
  /**
   * The store holds every token hash and plant, so its files are the owner's alone: the folder
   * is made 0700 and the file 0600 before SQLite opens it (SQLite gives the -wal and -shm files
   * the database file's mode).
   */
  beforeConnect(database) {
    if (database.path === ':memory:') return;
    makeDirectory(dirname(database.path));
    closeSync(openSync(database.path, 'a', 0o600));
  },
  check: () => Promise.resolve(),
  /**
   * The file lock serialises the writes; TypeORM reads the list of applied migrations before it
   * takes any lock, so a process that lost the race finds the work done when it looks again.
   */
  async migrate(dataSource, database) {
    const run = async (): Promise<string[]> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return (await dataSource.runMigrations({ transaction: 'each' })).map((migration) => migration.name);
        } catch (error) {
          if (!(await dataSource.showMigrations())) return []; // another process applied them
          if (attempt >= 5) throw error;
          await sleep(50 * attempt);
        }
      }
    };
    // A breaking migration waits for the server lock (another process may be applying it: it is
    // then no longer pending), for as long as opening waits for any lock.
    const deadline = Date.now() + OPEN_BUSY_TIMEOUT_MS;
    for (;;) {
      let breaking: string | undefined;
      try {
        const pending = await new MigrationExecutor(dataSource).getPendingMigrations();
        breaking = pending.find((migration) => !isCompatible(migration.name))?.name;
      } catch (error) {
        // Another process creating the migrations table at the same moment: look again.
        if (Date.now() >= deadline) throw error;
        await sleep(MIGRATION_LOOK_AGAIN_MS);
        continue;
      }
      if (breaking === undefined) return run();
      const applied = await withoutServers(database, run, breakingRefusal(breaking)).catch((error: unknown) => {
        if (error instanceof StoreCommandError && Date.now() < deadline) return undefined;
        throw error;
      });
      if (applied !== undefined) return applied;
      await sleep(MIGRATION_LOOK_AGAIN_MS);
    }
  },
  // The file lock serialises it with any other process's writes.
  revert: (dataSource, database, approve) =>
    withoutServers(database, async () => {
      const runner = dataSource.createQueryRunner();
      try {
        await approve(runner);
      } finally {
        await runner.release();
      }
      await dataSource.undoLastMigration({ transaction: 'each' });
    }),
  // A promise that rejects with what the lock's opening throws.
  holdServerLock: (database) => new Promise((resolve) => resolve(sqliteServerLock(database))),
  backup: backupSqlite,
  serve(dataSource) {
    nativeSqlite(dataSource).pragma('busy_timeout = 0');
  },
};
