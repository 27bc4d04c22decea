import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { type DataSource, MigrationExecutor, QueryFailedError } from 'typeorm';
import type { DatabaseConfig } from '../../config/configuration';
import { breakingRefusal, isCompatible, migrationFiles, StoreCommandError, type StoreKind } from '../store-kind';
import { StoreCheck } from '../store-outage';
import { backupSqlite } from './backup';
import { SqliteCheckpointer } from './checkpointer';
import { isSqliteBusy, sqliteFailure } from './handle';
import { OPEN_BUSY_TIMEOUT_MS, sqliteServerLock, withoutServers } from './server-lock';

/** How often a start looks again while another process applies the migrations or holds the file. */
const LOOK_AGAIN_MS = 50;

/** synchronous=FULL: every commit's log is synced. A new file refuses WAL while another process writes: tried again. */
async function useWal(db: Database.Database): Promise<void> {
  if (db.memory) return;
  const deadline = Date.now() + OPEN_BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      break;
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() >= deadline) throw error;
      await sleep(LOOK_AGAIN_MS);
    }
  }
  db.pragma('synchronous = FULL');
}

/** `mkdir -p` with mode 0700; Node's recursive mkdir never returns under a path such as /proc. */
function makeDirectory(path: string): void {
  if (existsSync(path)) return;
  const parent = dirname(path);
  if (parent !== path) makeDirectory(parent);
  mkdirSync(path, { mode: 0o700 });
}

type SqliteConfig = Extract<DatabaseConfig, { type: 'sqlite' }>;

/** Opening and migrating wait for another process's lock; the server's connection then never waits in SQLite. */
export const SQLITE: StoreKind<SqliteConfig> = {
  options: (database, entities) => ({
    type: 'better-sqlite3',
    database: database.path,
    timeout: OPEN_BUSY_TIMEOUT_MS,
    prepareDatabase: useWal,
    entities,
    migrations: [migrationFiles('sqlite')],
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
  }),
  describe: (database) => `SQLite file ${database.path}`,
  isBusy: isSqliteBusy,
  busyWith: 'the SQLite file stayed locked by another process',
  failure: sqliteFailure,
  transactionsAtOnce: 1,
  readsInTransaction: false,
  beforeConnect(database) {
    if (database.path === ':memory:') return;
    makeDirectory(dirname(database.path));
    closeSync(openSync(database.path, 'a', 0o600)); // SQLite gives -wal and -shm the file's mode
  },
  check: () => Promise.resolve(),
  async migrate(dataSource, database) {
    // TypeORM reads what is applied before it locks: a process that lost the race finds it done.
    const run = async (): Promise<string[]> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return (await dataSource.runMigrations({ transaction: 'each' })).map((migration) => migration.name);
        } catch (error) {
          if (!(await dataSource.showMigrations())) return [];
          if (attempt >= 5) throw error;
          await sleep(LOOK_AGAIN_MS * attempt);
        }
      }
    };
    const deadline = Date.now() + OPEN_BUSY_TIMEOUT_MS;
    for (;;) {
      let breaking: string | undefined;
      try {
        const pending = await new MigrationExecutor(dataSource).getPendingMigrations();
        breaking = pending.find((migration) => !isCompatible(migration.name))?.name;
      } catch (error) {
        if (Date.now() >= deadline) throw error; // another process making the migrations table
        await sleep(LOOK_AGAIN_MS);
        continue;
      }
      if (breaking === undefined) return run();
      const applied = await withoutServers(database, run, breakingRefusal(breaking)).catch((error: unknown) => {
        if (error instanceof StoreCommandError && Date.now() < deadline) return undefined;
        throw error;
      });
      if (applied !== undefined) return applied;
      await sleep(LOOK_AGAIN_MS);
    }
  },
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
  holdServerLock: (database) => new Promise((resolve) => resolve(sqliteServerLock(database))),
  backup: backupSqlite,
  // better-sqlite3's busy timeout would block the event loop: a server's write waits on a timer instead.
  serve: async (dataSource) => void (await dataSource.query('PRAGMA busy_timeout = 0')),
  storeCheck: (dataSource) => new SqliteStoreCheck(dataSource),
  companion: (dataSource) => new SqliteCheckpointer(dataSource),
};

/** `takesWrites` commits a change nobody sees: the only proof a full disk or read-only remount has passed. */
export class SqliteStoreCheck extends StoreCheck {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async ready(): Promise<void> {
    await this.query('SELECT (SELECT 1 FROM "plant" LIMIT 0), (SELECT 1 FROM "api_token" LIMIT 0)');
  }

  async takesWrites(): Promise<void> {
    await this.ready();
    const [{ user_version }] = (await this.query('PRAGMA user_version')) as { user_version: number }[];
    await this.query(`PRAGMA user_version = ${user_version}`);
  }

  private async query(sql: string): Promise<unknown> {
    try {
      return await this.dataSource.query(sql);
    } catch (error) {
      throw sqliteFailure(error instanceof QueryFailedError ? error.driverError : error);
    }
  }
}
