import type { DataSource } from 'typeorm';
import { PreparedStatement, sqliteFailure } from '../../database/sqlite';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../database/store-unavailable.error';
import type { TokenRecord, TokenStore } from '../token-store';

/** A prepared statement on the shared handle; in WAL mode a read never waits for a writer. */
export class SqliteTokenStore implements TokenStore {
  private readonly lookup: PreparedStatement<[string], TokenRecord>;

  constructor(
    dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {
    this.lookup = new PreparedStatement(
      dataSource,
      'SELECT "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = ?',
    );
  }

  findByHash(hash: string): Promise<TokenRecord | undefined> {
    try {
      return Promise.resolve(this.lookup.get().get(hash));
    } catch (error) {
      const failure = sqliteFailure(error);
      if (failure instanceof StoreUnavailableError) this.outage.failed(failure);
      return Promise.reject(failure instanceof Error ? failure : new Error(String(failure)));
    }
  }
}
