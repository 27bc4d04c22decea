/**
 * Bearer authentication: the passport strategy that checks a token against the store, and the
 * guard, global, that runs it on every route not marked `@Public()`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard, PassportStrategy } from '@nestjs/passport';
import DataLoader from 'dataloader';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import { Metrics } from '../observability/metrics';
import { traced, tracing } from '../observability/tracing';
import { IS_PUBLIC_KEY } from './public.decorator';
import { type TokenRecord, TokenStore } from './token-store';
import { asError, unauthorized } from './unauthorized';

export const TOKEN_PREFIX = 'pst_';
/** `pst_` + 43 base64url characters: 32 random bytes. */
export const TOKEN_PATTERN = /^pst_[A-Za-z0-9_-]{43}$/;

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * What the store keeps instead of the token: lower-case hex SHA-256. A request's token is found
 * by looking its hash up (an index probe), never by comparing secrets, so how long a refusal
 * takes depends on the hash, which an attacker cannot steer towards a stored one.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * RFC 6750 §2.1 (`"Bearer" 1*SP b64token`) allows one or more spaces after the scheme;
 * passport-http-bearer splits the header on single spaces and refuses anything but two parts.
 */
function oneSpaceAfterScheme(header: string | undefined): string | undefined {
  return header?.includes('  ') === true ? header.replace(/^(\S+) +/, '$1 ') : header;
}

export interface AuthenticatedClient {
  tokenName: string;
}

/**
 * `passport-http-bearer` on our token store. The strategy also looks for `access_token` in the
 * query string and the body; the contract allows the header only, so it is shown a request
 * that has nothing but the Authorization header.
 */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  /**
   * This turn's look-ups, by token: the requests of one turn of the event loop that carry the
   * same token share one hash and one read of the store, and on a store that gathers a turn
   * (TokenStore.gathersATurn) every token of the turn shares one read. Nothing is kept past the
   * turn, so a revocation by any process on the same store counts from the next turn on.
   */
  private readonly thisTurn: DataLoader<string, TokenRecord | undefined>;
  /** Whether this turn's look-ups are already to be forgotten once it ends. */
  private clearing = false;

  constructor(
    tokens: TokenStore,
    private readonly metrics: Metrics,
  ) {
    super();
    this.thisTurn = new DataLoader(
      (secrets) => {
        const lookUp = async (): Promise<(TokenRecord | undefined)[]> => {
          const hashes = secrets.map(hashToken);
          const found = await tokens.findByHashes(hashes);
          return hashes.map((hash) => found.get(hash));
        };
        // Traced once per read: a span per request that shares it would cost as much as the read.
        return tracing.on ? traced('token lookup', lookUp) : lookUp();
      },
      {
        batch: tokens.gathersATurn,
        batchScheduleFn: tokens.gathersATurn ? (gather) => setImmediate(gather) : undefined,
      },
    );
  }

  /** The active token with this secret, or false. */
  async validate(token: string): Promise<AuthenticatedClient | false> {
    if (!TOKEN_PATTERN.test(token)) {
      this.metrics.tokenLookedUp('invalid');
      return false;
    }
    let record: TokenRecord | undefined;
    try {
      record = await this.lookUp(token);
    } catch (error) {
      this.metrics.tokenLookedUp('unavailable');
      throw error;
    }
    if (record === undefined || record.revokedAt !== null) {
      this.metrics.tokenLookedUp('invalid');
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
    const headerOnly = { headers: { authorization: oneSpaceAfterScheme(req.headers.authorization) } } as Request;
    super.authenticate(headerOnly, options);
  }
}

/**
 * Deny by default: every route needs a valid bearer token (the `bearer` passport strategy,
 * BearerStrategy) unless marked `@Public()`. A missing or wrong token is the contract's 401,
 * saying what was wrong; a store that fails while the token is checked is not the client's
 * fault, so its error goes on to the exception filter as it is (503).
 *
 * @nestjs/passport's AuthGuard, as its documentation extends it. With FAST_PATH on,
 * `FastBearerAuthGuard` (src/fast-path) stands in for it, held to it by a property test.
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  constructor(private readonly reflector: Reflector) {
    super({ session: false });
  }

  override canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC_KEY, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic === true) return true;
    return super.canActivate(context) as Promise<boolean>;
  }

  override handleRequest<Client>(
    error: unknown,
    client: Client | false,
    _info: unknown,
    context: ExecutionContext,
  ): Client {
    if (error !== null && error !== undefined) throw asError(error);
    if (client === false || client === null || client === undefined) {
      throw unauthorized(context.switchToHttp().getRequest<Request>());
    }
    return client;
  }
}
