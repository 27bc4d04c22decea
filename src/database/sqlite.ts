import type Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { StoreUnavailableError } from './store-unavailable.error';

/**
 * How long a create waits for another process's write lock on the SQLite file before it is
 * answered 503. The wait is asynchronous (see `SqlitePlantStore`): the connection's own busy
 * timeout is 0 in the server, because better-sqlite3 would wait it out synchronously and stop
 * the event loop, and with it every other request, for as long.
 */
export const SQLITE_LOCK_WAIT_MS = 5000;

/** Primary result codes meaning "the file cannot be used right now", not a bug of ours. */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL|NOTADB|CORRUPT)(_|$)/;

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
