import type { DataSource } from 'typeorm';
import { lookupBatcher } from '../../database/lookup-batcher';
import { nativeSqlite, PreparedStatement, sqliteFailure } from '../../database/sqlite';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../database/store-unavailable.error';
import type { TokenRecord, TokenStore } from '../token-store';

/**
 * A prepared statement on the shared handle; the look-ups of one event-loop turn run in one read
 * transaction, once per distinct hash. In WAL mode a read never waits for a writer.
 */
export class SqliteTokenStore implements TokenStore {
  private readonly lookup: PreparedStatement<[string], TokenRecord>;
  readonly findByHash: (hash: string) => Promise<TokenRecord | undefined>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {
    this.lookup = new PreparedStatement(
      dataSource,
      'SELECT "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = ?',
    );
    this.findByHash = lookupBatcher((hashes) => this.findMany(hashes));
  }

  private findMany(hashes: readonly string[]): Promise<ReadonlyMap<string, TokenRecord>> {
    try {
      const statement = this.lookup.get();
      const read = nativeSqlite(this.dataSource).transaction(() => {
        const found = new Map<string, TokenRecord>();
        for (const hash of hashes) {
          const record = statement.get(hash);
          if (record !== undefined) found.set(hash, record);
        }
        return found;
      });
      return Promise.resolve(read.deferred());
    } catch (error) {
      const failure = sqliteFailure(error);
      if (failure instanceof StoreUnavailableError) this.outage.failed(failure);
      return Promise.reject(failure instanceof Error ? failure : new Error(String(failure)));
    }
  }
}
