import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { StoreUnavailableError } from '../../errors/store-unavailable.error';
import type { StoreOutage } from '../store-outage';

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
