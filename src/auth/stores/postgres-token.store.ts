import type { DataSource } from 'typeorm';
import { postgresFailure, postgresPool } from '../../database/postgres';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../database/store-unavailable.error';
import type { TokenRecord, TokenStore } from '../token-store';

const LOOKUP = {
  name: 'plant-store/token-by-hash',
  text: 'SELECT "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = $1',
};

/** A named (prepared once per connection) statement on the pool, no query building. */
export class PostgresTokenStore implements TokenStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {}

  async findByHash(hash: string): Promise<TokenRecord | undefined> {
    try {
      const result = await postgresPool(this.dataSource).query<TokenRecord>({ ...LOOKUP, values: [hash] });
      return result.rows[0];
    } catch (error) {
      const failure = error instanceof StoreUnavailableError ? error : postgresFailure(error);
      if (failure instanceof StoreUnavailableError) this.outage.failed(failure);
      throw failure;
    }
  }
}
