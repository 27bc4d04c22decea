import type { DataSource } from 'typeorm';
import { boundedQuery, postgresFailure, withPooledClient } from '../../database/postgres/connection';
import type { StoreOutage } from '../../database/store-outage';
import type { TokenRecord, TokenStore } from '../token-store';

const LOOKUP =
  'SELECT "token_hash" AS "hash", "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = ANY($1::text[])';

/** A turn's look-ups in one bounded statement (boundedQuery): one round trip for all of them. */
export class PostgresTokenStore implements TokenStore {
  readonly gathersATurn = true;

  constructor(
    private readonly dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {}

  async findByHashes(hashes: readonly string[]): Promise<ReadonlyMap<string, TokenRecord>> {
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
