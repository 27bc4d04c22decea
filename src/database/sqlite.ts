import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { type DataSource, MigrationExecutor } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import { CreatePlantStoreSqlite1795305600000 } from './migrations/sqlite/1795305600000-CreatePlantStore';
import { StoreCommandError, StoreCommandFailure } from './store-command.error';
import { isCompatible } from './migrations/store-migration';
import { breakingRefusal, SERVER_RUNNING, type ServerLock, type StoreKind } from './store-kind';
import type { StoreOutage } from './store-outage';
import { StoreUnavailableError } from '../errors/store-unavailable.error';

/**
 * How long a create waits for another process's write lock on the SQLite file before it is
 * answered 503. The wait is asynchronous (see `SqlitePlantStore`): the connection's own busy
 * timeout is 0 in the server, because better-sqlite3 would wait it out synchronously and stop
 * the event loop, and with it every other request, for as long.
 */
export const SQLITE_LOCK_WAIT_MS = 5000;

/** Primary result codes meaning "the file cannot be used right now", not a bug of ours. */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL|NOTADB|CORRUPT|PERM)(_|$)/;

/**
 * A schema the service cannot use (its tables dropped by a revert while it ran, a file of
 * another application): SQLite says so with its generic SQLITE_ERROR, so here alone the
 * message decides, and only these two wordings of it.
 */
const MISSING_SCHEMA = /^no such (table|column): /;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isSqliteBusy(error: unknown): boolean {
  return /^SQLITE_BUSY(_|$)/.test(codeOf(error) ?? '');
}

/** A driver error as the rest of the service should see it: unavailability is one class. */
export function sqliteFailure(error: unknown): unknown {
  const code = codeOf(error);
  if (code !== undefined && UNAVAILABLE.test(code)) return new StoreUnavailableError(code, { cause: error });
  if (code === 'SQLITE_ERROR' && MISSING_SCHEMA.test((error as Error).message)) {
    return new StoreUnavailableError(`${code}: ${(error as Error).message}`, { cause: error });
  }
  return error;
}

/**
 * The better-sqlite3 handle under a TypeORM DataSource. The hot paths use prepared statements on
 * it directly: the same connection and transaction scope as TypeORM, without building a query
 * per request. Throws StoreUnavailableError when the DataSource is closed.
 */
export function nativeSqlite(dataSource: DataSource): Database.Database {
  const db = dataSource.isInitialized
    ? (dataSource.driver as unknown as { databaseConnection?: Database.Database }).databaseConnection
    : undefined;
  if (db === undefined || !db.open) throw new StoreUnavailableError('the SQLite database is closed');
  return db;
}

/**
 * A statement prepared once per connection: if the DataSource is closed and opened again, the
 * next use prepares it on the new handle (a statement on a closed handle would only throw).
 */
export class PreparedStatement<Params extends unknown[], Row = unknown> {
  private db?: Database.Database;
  private statement?: Database.Statement<Params, Row>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: string,
  ) {}

  get(): Database.Statement<Params, Row> {
    const db = nativeSqlite(this.dataSource);
    if (db !== this.db || this.statement === undefined) {
      this.statement = db.prepare<Params, Row>(this.sql);
      this.db = db;
    }
    return this.statement;
  }
}

/**
 * Whether the files on disk are still the ones this process has open: the database, its `-wal`
 * and its `-shm`. Deleting, replacing or truncating any of them under a running server (a
 * restore done by hand, a clean-up script) would let it go on writing to a file no one else will
 * ever read, apart from every other process, or after a hole that recovery stops at:
 * acknowledged creates lost, a revoked token still accepted. Each is compared by device and inode
 * and must not have shrunk: while any connection is open, SQLite only ever grows them (this
 * service never truncates its log, and it is removed only when the last connection closes), so
 * a smaller file was cut by someone else. Once a file differs, the store is lost for good in this
 * process (StoreUnavailableError, every time) until it is restarted on the files as they are.
 * Checked before every batch is written (under the write lock), after every commit and every
 * token read: three `stat` calls each time. What it cannot see is a file overwritten in place
 * with other content of at least the same size (`cp other.sqlite` over the store): see
 * "Guarantees" in docs/operations.md.
 */
export class SqliteFiles {
  private readonly files: { path: string; dev: number; ino: number; size: number }[];
  private lost?: StoreUnavailableError;

  constructor(
    dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {
    const path = dataSource.options.database;
    const paths = typeof path === 'string' && path !== ':memory:' ? [path, `${path}-wal`, `${path}-shm`] : [];
    this.files = paths.flatMap((file) => {
      const stat = statSync(file, { throwIfNoEntry: false });
      return stat === undefined ? [] : [{ path: file, dev: stat.dev, ino: stat.ino, size: stat.size }];
    });
  }

  /** Throws StoreUnavailableError if any file is gone, another file stands at its path, or it shrank. */
  check(): void {
    if (this.lost !== undefined) throw this.lost;
    for (const file of this.files) {
      const now = statSync(file.path, { throwIfNoEntry: false });
      const what =
        now === undefined
          ? 'deleted'
          : now.dev !== file.dev || now.ino !== file.ino
            ? 'replaced'
            : now.size < file.size
              ? 'truncated'
              : undefined;
      if (what !== undefined) {
        this.lost = new StoreUnavailableError(
          `the SQLite file ${file.path} was ${what} while the server had it open; nothing more is written to it: ` +
            'restart the server',
        );
        this.outage.broken(this.lost);
        throw this.lost;
      }
      file.size = now!.size;
    }
  }
}

function fsyncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Gives `from` the name `to` unless `to` exists, atomically: a hard link (EEXIST if `to` appeared
 * meanwhile). On a file system without hard links, a rename after a last look.
 */
function nameWithoutOverwriting(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new StoreCommandError(`${to} exists: a backup goes to a new file`);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
    if (existsSync(to)) throw new StoreCommandError(`${to} exists: a backup goes to a new file`);
    renameSync(from, to);
  }
}

/**
 * Every server on a SQLite store holds a shared lock on a file beside it (`STORE.server-lock`,
 * an empty SQLite database in its default journal mode, where a read transaction holds a
 * shared lock until it ends), for as long as it runs: the kernel drops it when the process exits,
 * however it exits. An operator's command that must not run beside a server takes the exclusive
 * lock for as long as it works; it cannot while any server holds the file, and a server cannot
 * start meanwhile. Not the store itself: a read transaction held open there would stop every
 * checkpoint, and the log would grow without end.
 */
function openServerLock(database: SqliteConfig, busyTimeoutMs: number): { path: string; lock: Database.Database } {
  const path = `${database.path}.server-lock`;
  closeSync(openSync(path, 'a', 0o600));
  return { path, lock: new Database(path, { timeout: busyTimeoutMs }) };
}

function sqliteServerLock(database: SqliteConfig): ServerLock {
  if (database.path === ':memory:') return { release: () => Promise.resolve() };
  const { path, lock } = openServerLock(database, OPEN_BUSY_TIMEOUT_MS);
  try {
    lock.exec('BEGIN');
    lock.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (error) {
    lock.close();
    if (isSqliteBusy(error)) {
      throw new Error(`an operator's command holds ${path}; start the server once it is done`, { cause: error });
    }
    throw error;
  }
  return {
    release() {
      lock.close();
      return Promise.resolve();
    },
  };
}

/** `work`, while no server holds the store (and none can start); StoreCommandError(`refusal`) if one does. */
async function withoutServers<T>(database: SqliteConfig, work: () => Promise<T>, refusal = SERVER_RUNNING): Promise<T> {
  if (database.path === ':memory:') return work();
  const { lock } = openServerLock(database, 0);
  try {
    try {
      lock.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      if (isSqliteBusy(error)) throw new StoreCommandError(refusal);
      throw error;
    }
    return await work();
  } finally {
    lock.close();
  }
}

/** How long opening and migrating wait for another process's lock on the file. */
const OPEN_BUSY_TIMEOUT_MS = 5000;

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
    migrations: [CreatePlantStoreSqlite1795305600000],
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
  /**
   * SQLite's online backup, page by page, while the server goes on writing: the copy is the
   * store at one moment. It is written to a temporary file beside `file` (new, 0600: a backup
   * holds every token hash), flushed to disk, and only then given its name, by a hard link that
   * fails rather than overwrite anything: so `file` is the whole copy or nothing. A failure on
   * the way (a full disk) removes the temporary file and its journal.
   */
  async backup(dataSource, file) {
    if (existsSync(file)) throw new StoreCommandError(`${file} exists: a backup goes to a new file`);
    const partial = join(dirname(file), `.${basename(file)}.partial-${process.pid}`);
    try {
      closeSync(openSync(partial, 'wx', 0o600));
    } catch (error) {
      throw new StoreCommandError(`cannot create ${file} (${(error as NodeJS.ErrnoException).code ?? 'unknown'})`);
    }
    try {
      await nativeSqlite(dataSource).backup(partial);
      fsyncFile(partial);
      nameWithoutOverwriting(partial, file);
      fsyncFile(dirname(file));
    } catch (error) {
      if (error instanceof StoreCommandError) throw error;
      const code = (error as { code?: unknown }).code;
      throw new StoreCommandFailure(
        `cannot write the backup to ${file} (${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message}); nothing was left behind`,
      );
    } finally {
      rmSync(partial, { force: true });
      rmSync(`${partial}-journal`, { force: true });
    }
  },
  serve(dataSource) {
    nativeSqlite(dataSource).pragma('busy_timeout = 0');
  },
};
