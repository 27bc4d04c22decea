import type { DataSource } from 'typeorm';
import { lookupBatcher } from '../../database/lookup-batcher';
import { boundedQuery, isTransportFailure, postgresClient, postgresFailure } from '../../database/postgres';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../database/store-unavailable.error';
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
    try {
      const client = await postgresClient(this.dataSource);
      let broken = false;
      try {
        const result = await boundedQuery<TokenRecord & { hash: string }>(client, { text: LOOKUP, values: [hashes] });
        return new Map(result.rows.map(({ hash, name, revokedAt }) => [hash, { name, revokedAt }]));
      } catch (error) {
        broken = isTransportFailure(error);
        throw postgresFailure(error);
      } finally {
        client.release(broken);
      }
    } catch (error) {
      throw this.outage.report(error instanceof StoreUnavailableError ? error : postgresFailure(error));
    }
  }
}
