import type Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';

/**
 * The better-sqlite3 handle under a TypeORM DataSource, or undefined for other stores. The hot
 * paths use prepared statements on it directly: the same connection and transaction scope as
 * TypeORM, without building a query per request.
 */
export function nativeSqlite(dataSource: DataSource): Database.Database | undefined {
  if (dataSource.options.type !== 'better-sqlite3' || !dataSource.isInitialized) return undefined;
  return (dataSource.driver as unknown as { databaseConnection: Database.Database }).databaseConnection;
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
    if (db === undefined) throw new Error('The database connection is not open');
    if (db !== this.db || this.statement === undefined) {
      this.statement = db.prepare<Params, Row>(this.sql);
      this.db = db;
    }
    return this.statement;
  }
}
