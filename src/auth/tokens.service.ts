import type { DataSource, Repository } from 'typeorm';
import { ApiTokenEntity } from './api-token.entity';
import { generateToken, hashToken } from './token-secret';

export interface TokenSummary {
  name: string;
  createdAt: string;
  state: 'active' | 'revoked';
  revokedAt: string | null;
}

export type RevokeResult = { outcome: 'revoked'; at: string } | { outcome: 'already-revoked'; at: string };

/** A bad token name or a name in use; the message is the operator's one line. */
export class TokenNameError extends Error {}

/** Token names: what `npm run token -- create` accepts (and docs/operations.md says). */
export const TOKEN_NAME_RULE =
  '1 to 100 characters of letters, digits, ".", "_", "@" or "-", starting with a letter or digit';
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

/**
 * The operator's token commands: issue, list, revoke. A plain class over a DataSource, so the
 * command line uses it without booting Nest. (Requests are checked by the TokenStore.)
 */
export class TokensService {
  private readonly tokens: Repository<ApiTokenEntity>;

  constructor(dataSource: DataSource) {
    this.tokens = dataSource.getRepository(ApiTokenEntity);
  }

  /** Returns the secret; it is shown once and never stored. */
  async create(name: string, now = new Date()): Promise<string> {
    if (!NAME_PATTERN.test(name)) throw new TokenNameError(`token names are ${TOKEN_NAME_RULE}`);
    if (await this.tokens.existsBy({ name })) {
      throw new TokenNameError(`a token named "${name}" already exists, and names are never reused: pick another name`);
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

  /** Undefined when no token has that name. Revoking twice keeps the first time. */
  async revoke(name: string, now = new Date()): Promise<RevokeResult | undefined> {
    const token = await this.tokens.findOneBy({ name });
    if (token === null) return undefined;
    if (token.revokedAt !== null) return { outcome: 'already-revoked', at: token.revokedAt };
    const at = now.toISOString();
    await this.tokens.update({ name }, { revokedAt: at });
    return { outcome: 'revoked', at };
  }
}
