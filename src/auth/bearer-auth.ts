import { createHash, randomBytes } from 'node:crypto';
import { type ExecutionContext, Injectable, type Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard, PassportStrategy } from '@nestjs/passport';
import { InjectRepository } from '@nestjs/typeorm';
import DataLoader from 'dataloader';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import type { Repository } from 'typeorm';
import { Store } from '../database/store';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { Metrics } from '../observability/metrics';
import { traced } from '../observability/tracing';
import { IS_PUBLIC_KEY } from '../http/public.decorator';
import { ApiTokenEntity } from './api-token.entity';

export const TOKEN_PREFIX = 'pst_';
export const TOKEN_PATTERN = /^pst_[A-Za-z0-9_-]{43}$/;
export const REALM = 'plant-store';

export const generateToken = (): string => TOKEN_PREFIX + randomBytes(32).toString('base64url');

/** A token is found by its hash (an index probe), never by comparing secrets: a refusal's timing tells nothing. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** RFC 6750 allows several spaces after the scheme; passport-http-bearer splits on one. */
function oneSpaceAfterScheme(header: string | undefined): string | undefined {
  return header?.includes('  ') === true ? header.replace(/^(\S+) +/, '$1 ') : header;
}

export interface AuthenticatedClient {
  tokenName: string;
}

type TokenRecord = { hash: string; name: string; revokedAt: string | null };

/**
 * passport-http-bearer, shown only the Authorization header. The tokens of one event-loop turn are
 * read together where a read costs a transaction, each at once where it is an index probe;
 * nothing is kept past the turn, so a revocation counts at once.
 */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  private readonly thisTurn: DataLoader<string, TokenRecord | undefined>;
  private clearing = false;

  constructor(
    @InjectRepository(ApiTokenEntity) tokens: Repository<ApiTokenEntity>,
    store: Store,
    private readonly metrics: Metrics,
  ) {
    super();
    const read = (hashes: string[]): Promise<TokenRecord[]> =>
      store.read((manager) =>
        manager
          .getRepository(tokens.target)
          .createQueryBuilder('token')
          .select('token.tokenHash', 'hash')
          .addSelect('token.name', 'name')
          .addSelect('token.revokedAt', 'revokedAt')
          .where('token.tokenHash IN (:...hashes)', { hashes })
          .getRawMany<TokenRecord>(),
      );
    this.thisTurn = new DataLoader(
      async (secrets) => {
        const hashes = secrets.map(hashToken);
        const rows = await (store.tracing ? traced('token lookup', () => read(hashes)) : read(hashes));
        const found = new Map(rows.map((row) => [row.hash, row]));
        return hashes.map((hash) => found.get(hash));
      },
      // Where a read costs a transaction (PostgreSQL), a turn's are gathered into one; else each is an index probe.
      store.dialect.readsInTransaction ? { batchScheduleFn: (gather) => setImmediate(gather) } : { batch: false },
    );
  }

  async validate(token: string): Promise<AuthenticatedClient | false> {
    let record: TokenRecord | undefined;
    try {
      record = TOKEN_PATTERN.test(token) ? await this.lookUp(token) : undefined;
    } catch (error) {
      this.metrics.tokenLookedUp('unavailable');
      throw error;
    }
    if (record?.revokedAt !== null) {
      this.metrics.tokenLookedUp('invalid'); // unknown, or revoked
      return false;
    }
    this.metrics.tokenLookedUp('valid');
    return { tokenName: record.name };
  }

  private lookUp(token: string): Promise<TokenRecord | undefined> {
    const pending = this.thisTurn.load(token);
    if (!this.clearing) {
      this.clearing = true;
      setImmediate(() => {
        this.clearing = false;
        this.thisTurn.clearAll();
      });
    }
    return pending;
  }

  override authenticate(req: Request, options?: object): void {
    super.authenticate(
      { headers: { authorization: oneSpaceAfterScheme(req.headers.authorization) } } as Request,
      options,
    );
  }
}

/** The 401 for a request passport turned away, saying what was wrong with what it sent. */
export function unauthorized(request: Request): ApiError {
  const header = request.headers.authorization?.trim() ?? '';
  const sentBearer = /^bearer\s+\S/i.test(header);
  let message = 'Invalid or revoked token';
  if (header === '') message = 'Missing credentials: send Authorization: Bearer <token>';
  else if (/^bearer$/i.test(header))
    message = 'Missing token: the Authorization header says Bearer but carries no token';
  else if (!sentBearer) message = 'Unsupported authorization scheme: use Authorization: Bearer <token>';
  const challenge = sentBearer ? `Bearer realm="${REALM}", error="invalid_token"` : `Bearer realm="${REALM}"`;
  return new ApiError(ErrorCode.Unauthorized, message, { 'WWW-Authenticate': challenge });
}

/** Deny by default; `@Public()` opts out. A store failing during the check is answered as it is (503). */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  /** Whether each route is `@Public()`, by controller and handler: its metadata is fixed once the application is built. */
  private readonly publicRoutes = new WeakMap<Type, WeakMap<object, boolean>>();

  constructor(private readonly reflector: Reflector) {
    super({ session: false });
  }

  override canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const [type, handler] = [context.getClass(), context.getHandler()];
    let routes = this.publicRoutes.get(type);
    if (routes === undefined) this.publicRoutes.set(type, (routes = new WeakMap()));
    let isPublic = routes.get(handler);
    if (isPublic === undefined) {
      isPublic = this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC_KEY, [handler, type]) === true;
      routes.set(handler, isPublic);
    }
    return isPublic || (super.canActivate(context) as Promise<boolean>);
  }

  override handleRequest<Client>(error: unknown, client: Client | false, _info: unknown, context: ExecutionContext) {
    if (error !== null && error !== undefined) {
      throw error instanceof Error ? error : new Error('token check failed', { cause: error });
    }
    if (client === false || client === null || client === undefined) {
      throw unauthorized(context.switchToHttp().getRequest<Request>());
    }
    return client;
  }
}
