import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { Store } from '../database/store';
import { ApiTokenEntity } from './api-token.entity';
import { generateToken, hashToken } from './bearer-auth';

/** What `list` shows of a token: never its hash. */
export type TokenSummary = Pick<ApiTokenEntity, 'name' | 'createdAt' | 'revokedAt'>;

export type RevokeResult = { outcome: 'revoked'; at: string } | { outcome: 'already-revoked'; at: string };

export class TokenNameError extends Error {}

export const TOKEN_NAME_RULE =
  '1 to 100 characters of letters, digits, ".", "_", "@" or "-", starting with a letter or digit';
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

/** The operator's commands: each one transaction, which bounds it on PostgreSQL. */
@Injectable()
export class TokensService {
  constructor(
    @InjectRepository(ApiTokenEntity) private readonly tokens: Repository<ApiTokenEntity>,
    private readonly store: Store,
  ) {}

  private inTransaction<T>(work: (tokens: Repository<ApiTokenEntity>) => Promise<T>): Promise<T> {
    return this.store.transaction((manager) => work(manager.withRepository(this.tokens)));
  }

  /** Returns the secret; it is shown once and never stored. */
  async create(name: string, now = new Date()): Promise<string> {
    if (!NAME_PATTERN.test(name)) throw new TokenNameError(`token names are ${TOKEN_NAME_RULE}`);
    const token = generateToken();
    const row = { name, tokenHash: hashToken(token), createdAt: now.toISOString(), revokedAt: null };
    try {
      // The write comes first: a SQLite transaction that read first could not then take the
      // write lock while the server writes (SQLITE_BUSY at once, no waiting).
      await this.inTransaction((tokens) => tokens.insert(row));
    } catch (error) {
      if (await this.inTransaction((tokens) => tokens.existsBy({ name }))) {
        throw new TokenNameError(
          `a token named "${name}" already exists, and names are never reused: pick another name`,
        );
      }
      throw error;
    }
    return token;
  }

  list(): Promise<TokenSummary[]> {
    const select = { name: true, createdAt: true, revokedAt: true } as const;
    return this.inTransaction((tokens) => tokens.find({ select, order: { id: 'ASC' } }));
  }

  /** Undefined when no token has that name. Revoking twice keeps the first time. */
  async revoke(name: string, now = new Date()): Promise<RevokeResult | undefined> {
    const at = now.toISOString();
    return this.inTransaction(async (tokens) => {
      const revoked = await tokens.update({ name, revokedAt: IsNull() }, { revokedAt: at });
      if (revoked.affected === 1) return { outcome: 'revoked', at };
      const token = await tokens.findOneBy({ name });
      if (token?.revokedAt == null) return undefined;
      return { outcome: 'already-revoked', at: token.revokedAt };
    });
  }
}
