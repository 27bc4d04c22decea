import type Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import type { StoreImplementations } from '../database/database.module';
import { boundedRead, postgresFailure, withPooledClient } from '../database/postgres/connection';
import { nativeSqlite, sqliteFailure } from '../database/sqlite/handle';
import type { StoreOutage } from '../database/store-outage';

export interface TokenRecord {
  name: string;
  revokedAt: string | null;
}

export abstract class TokenStore {
  /** Whether a turn's look-ups are best gathered into one read (a round trip to a server). */
  abstract readonly gathersATurn: boolean;
  abstract findByHashes(hashes: readonly string[]): Promise<ReadonlyMap<string, TokenRecord>>;
}

/** An index probe on the shared handle as each request arrives: in WAL mode a read never waits. */
export class SqliteTokenStore implements TokenStore {
  readonly gathersATurn = false;
  private readonly lookup: Database.Statement<[string], TokenRecord>;

  constructor(
    dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {
    this.lookup = nativeSqlite(dataSource).prepare(
      'SELECT "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = ?',
    );
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- a failure rejects, as on PostgreSQL
  async findByHashes(hashes: readonly string[]): Promise<ReadonlyMap<string, TokenRecord>> {
    const found = new Map<string, TokenRecord>();
    try {
      for (const hash of hashes) {
        const record = this.lookup.get(hash);
        if (record !== undefined) found.set(hash, record);
      }
    } catch (error) {
      throw this.outage.report(sqliteFailure(error));
    }
    return found;
  }
}

const LOOKUP =
  'SELECT "token_hash" AS "hash", "name", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" IN';

/** A turn's look-ups in one message with their bounds: one round trip, and no BEGIN and COMMIT to run. */
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
        const quoted = hashes.map((hash) => client.escapeLiteral(hash)).join(', ');
        const rows = await boundedRead<TokenRecord & { hash: string }>(client, `${LOOKUP} (${quoted})`);
        return new Map(rows.map(({ hash, name, revokedAt }) => [hash, { name, revokedAt }]));
      });
    } catch (error) {
      throw this.outage.report(postgresFailure(error), epoch);
    }
  }
}

export const TOKEN_STORES: StoreImplementations<TokenStore> = {
  sqlite: SqliteTokenStore,
  postgres: PostgresTokenStore,
};
