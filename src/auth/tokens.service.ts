import { type DataSource, IsNull, type Repository } from 'typeorm';
import { PreparedStatement } from '../database/sqlite-native';
import { ApiToken } from './api-token.entity';
import { generateToken, hashToken, sameHash, TOKEN_PATTERN } from './token-secret';

export interface TokenSummary {
  name: string;
  createdAt: string;
  state: 'active' | 'revoked';
  revokedAt: string | null;
}

export class TokenNameError extends Error {}

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

type TokenRow = Pick<ApiToken, 'name' | 'tokenHash' | 'revokedAt'>;

/**
 * Issues, lists, revokes and checks API tokens. Plain class over a DataSource, so the CLI
 * uses it without booting Nest; AuthModule provides it to the guard.
 */
export class TokensService {
  private readonly tokens: Repository<ApiToken>;
  /** SQLite: the per-request lookup as a prepared statement, not a query built each time. */
  private readonly sqliteLookup?: PreparedStatement<[string], TokenRow>;

  constructor(dataSource: DataSource) {
    this.tokens = dataSource.getRepository(ApiToken);
    if (dataSource.options.type === 'better-sqlite3') {
      this.sqliteLookup = new PreparedStatement(
        dataSource,
        'SELECT "name", "token_hash" AS "tokenHash", "revoked_at" AS "revokedAt" FROM "api_token" WHERE "token_hash" = ?',
      );
    }
  }

  /** Returns the secret; it is shown once and never stored. */
  async create(name: string, now = new Date()): Promise<string> {
    if (!NAME_PATTERN.test(name)) {
      throw new TokenNameError(
        'token name must be 1-100 characters of letters, digits, ".", "_", "@" or "-", starting with a letter or digit',
      );
    }
    if (await this.tokens.existsBy({ name })) {
      throw new TokenNameError(`a token named "${name}" already exists (names are never reused)`);
    }
    const token = generateToken();
    await this.tokens.insert({ name, tokenHash: hashToken(token), createdAt: now.toISOString(), revokedAt: null });
    return token;
  }

  async list(): Promise<TokenSummary[]> {
    const rows = await this.tokens.find({ order: { id: 'ASC' } });
    return rows.map((row) => ({
      name: row.name,
      createdAt: row.createdAt,
      state: row.revokedAt === null ? 'active' : 'revoked',
      revokedAt: row.revokedAt,
    }));
  }

  /** Returns false when no token has that name. Revoking twice keeps the first time. */
  async revoke(name: string, now = new Date()): Promise<boolean> {
    const token = await this.tokens.findOneBy({ name });
    if (token === null) return false;
    if (token.revokedAt === null) {
      await this.tokens.update({ name, revokedAt: IsNull() }, { revokedAt: now.toISOString() });
    }
    return true;
  }

  /**
   * The name of the active token with this secret, or null. Looked up by hash on every request,
   * so a revocation by any process on the same store counts from the next request on.
   */
  async verify(token: string): Promise<string | null> {
    if (!TOKEN_PATTERN.test(token)) return null;
    const hash = hashToken(token);
    const row: TokenRow | null | undefined = this.sqliteLookup
      ? this.sqliteLookup.get().get(hash)
      : await this.tokens.findOne({
          select: { name: true, tokenHash: true, revokedAt: true },
          where: { tokenHash: hash },
        });
    if (!row || !sameHash(row.tokenHash, hash) || row.revokedAt !== null) return null;
    return row.name;
  }
}
