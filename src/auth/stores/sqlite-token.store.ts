import type { DataSource } from 'typeorm';
import { PreparedStatement, SqliteFiles, sqliteFailure } from '../../database/sqlite';
import type { StoreOutage } from '../../database/store-outage';
import type { TokenRecord, TokenStore } from '../token-store';

/**
 * A prepared statement on the shared handle, run as the request arrives (an index probe; in WAL
 * mode a read never waits for a writer). Each read is a transaction of its own, which in WAL
 * mode takes and releases a lock on the `-shm` file (two system calls): BearerStrategy asks once
 * per token per turn of the event loop, not once per request. (Batching the reads into one query
 * at the end of the turn, as on PostgreSQL, would hold every create back a turn, and its batch
 * with it.)
 */
export class SqliteTokenStore implements TokenStore {
  private readonly lookup: PreparedStatement<[string], TokenRecord>;
  private readonly files: SqliteFiles;

  constructor(
    dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {
    this.files = new SqliteFiles(dataSource, outage);
    this.lookup = new PreparedStatement(
      dataSource,
      'SELECT "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = ?',
    );
  }

  findByHash(hash: string): Promise<TokenRecord | undefined> {
    let record: TokenRecord | undefined;
    try {
      record = this.lookup.get().get(hash);
      // A revocation written to the files on disk is not in files this process no longer shares.
      this.files.check();
    } catch (error) {
      const failure = this.outage.report(sqliteFailure(error));
      return Promise.reject(failure instanceof Error ? failure : new Error(String(failure)));
    }
    return Promise.resolve(record);
  }
}
