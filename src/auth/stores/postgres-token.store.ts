import type { DataSource } from 'typeorm';
import { lookupBatcher } from '../../database/lookup-batcher';
import { postgresFailure, postgresPool } from '../../database/postgres';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../database/store-unavailable.error';
import type { TokenRecord, TokenStore } from '../token-store';

const LOOKUP = {
  name: 'plant-store/tokens-by-hash',
  text: 'SELECT "token_hash" AS "hash", "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = ANY($1::text[])',
};

/**
 * The look-ups of one event-loop turn share one named (prepared once per connection) statement
 * on the pool: one round trip however many requests arrived together.
 */
export class PostgresTokenStore implements TokenStore {
  readonly findByHash: (hash: string) => Promise<TokenRecord | undefined>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {
    this.findByHash = lookupBatcher((hashes) => this.findMany(hashes));
  }

  private async findMany(hashes: readonly string[]): Promise<ReadonlyMap<string, TokenRecord>> {
    try {
      const result = await postgresPool(this.dataSource).query<TokenRecord & { hash: string }>({
        ...LOOKUP,
        values: [hashes],
      });
      return new Map(result.rows.map(({ hash, name, revokedAt }) => [hash, { name, revokedAt }]));
    } catch (error) {
      throw this.outage.report(error instanceof StoreUnavailableError ? error : postgresFailure(error));
    }
  }
}
