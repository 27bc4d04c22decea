import type { DataSource } from 'typeorm';
import { lookupBatcher } from '../../database/lookup-batcher';
import { boundedQuery, postgresFailure, withPooledClient } from '../../database/postgres';
import type { StoreOutage } from '../../database/store-outage';
import type { TokenRecord, TokenStore } from '../token-store';

const LOOKUP =
  'SELECT "token_hash" AS "hash", "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = ANY($1::text[])';

/**
 * The look-ups of one event-loop turn share one bounded statement (boundedQuery): one round
 * trip however many requests arrived together.
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
    const epoch = this.outage.epoch;
    try {
      return await withPooledClient(this.dataSource, async (client) => {
        const result = await boundedQuery<TokenRecord & { hash: string }>(client, { text: LOOKUP, values: [hashes] });
        return new Map(result.rows.map(({ hash, name, revokedAt }) => [hash, { name, revokedAt }]));
      });
    } catch (error) {
      throw this.outage.report(postgresFailure(error), epoch);
    }
  }
}
