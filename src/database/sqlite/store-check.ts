import type { DataSource } from 'typeorm';
import { nativeSqlite, PreparedStatement, SqliteFiles, sqliteFailure } from './handle';
import { StoreCheck } from '../store-check';
import type { StoreOutage } from '../store-outage';

/**
 * SQLite: `ready` checks the files are still the store's (SqliteFiles) and that both tables can
 * be read (a statement naming them, prepared once and run; SQLite checks the schema each time),
 * without any lock: another worker's commit holds the write lock for a moment, and that is no
 * outage. `takesWrites` then takes the write lock (`BEGIN IMMEDIATE`, which fails at once while
 * another process holds it) and commits a write that changes nothing a reader can see: the
 * database header's `user_version` set to the value it has. That is one page appended to the log
 * and one fsync, about once a second and only during an outage, and it is the only way to know
 * that a full disk, a read-only remount or an I/O error has passed: a lock alone proves none of
 * them.
 */
export class SqliteStoreCheck extends StoreCheck {
  private readonly files: SqliteFiles;
  private readonly tables: PreparedStatement<[]>;

  constructor(
    private readonly dataSource: DataSource,
    outage: StoreOutage,
  ) {
    super();
    this.files = new SqliteFiles(dataSource, outage);
    this.tables = new PreparedStatement(
      dataSource,
      'SELECT (SELECT 1 FROM "plant" LIMIT 0), (SELECT 1 FROM "api_token" LIMIT 0)',
    );
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- async: a failure rejects, as on PostgreSQL
  async ready(): Promise<void> {
    try {
      this.files.check();
      this.tables.get().get();
    } catch (error) {
      throw sqliteFailure(error);
    }
  }

  async takesWrites(): Promise<void> {
    await this.ready();
    const db = nativeSqlite(this.dataSource);
    try {
      db.exec('BEGIN IMMEDIATE');
      const version = Number(db.pragma('user_version', { simple: true }));
      db.pragma(`user_version = ${version}`);
      db.exec('COMMIT');
    } catch (error) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw sqliteFailure(error);
    }
    this.files.check();
  }
}
