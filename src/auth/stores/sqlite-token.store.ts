import type { DataSource } from 'typeorm';
import { PreparedStatement, SqliteFiles, sqliteFailure } from '../../database/sqlite/handle';
import type { StoreOutage } from '../../database/store-outage';
import type { TokenRecord, TokenStore } from '../token-store';

/**
 * A prepared statement on the shared handle, run as the request arrives (an index probe; in WAL
 * mode a read never waits for a writer). Gathering the reads at the end of the turn, as on
 * PostgreSQL, would hold every create back a turn, and its batch with it.
 */
export class SqliteTokenStore implements TokenStore {
  readonly gathersATurn = false;

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

  findByHashes(hashes: readonly string[]): Promise<ReadonlyMap<string, TokenRecord>> {
    const found = new Map<string, TokenRecord>();
    try {
      const lookup = this.lookup.get();
      for (const hash of hashes) {
        const record = lookup.get(hash);
        if (record !== undefined) found.set(hash, record);
      }
      // A revocation written to the files on disk is not in files this process no longer shares.
      this.files.check();
    } catch (error) {
      const failure = this.outage.report(sqliteFailure(error));
      return Promise.reject(failure instanceof Error ? failure : new Error(String(failure)));
    }
    return Promise.resolve(found);
  }
}
