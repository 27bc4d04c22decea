import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import { Metrics } from '../metrics/metrics';
import { traced } from '../tracing/tracing';
import { hashToken, TOKEN_PATTERN } from './token-secret';
import { type TokenRecord, TokenStore } from './token-store';

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
  constructor(
    private readonly tokens: TokenStore,
    private readonly metrics: Metrics,
  ) {
    super();
  }

  /**
   * This turn's look-ups, by token: the requests of one event-loop turn that carry the same token
   * share one hash and one read of the store. Nothing is kept past the turn, so a revocation by
   * any process on the same store counts from the next turn on.
   */
  private readonly thisTurn = new Map<string, Promise<TokenRecord | undefined>>();

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
    let pending = this.thisTurn.get(token);
    if (pending === undefined) {
      if (this.thisTurn.size === 0) setImmediate(() => this.thisTurn.clear());
      // Traced where the store is read, once for the turn: a span per request that shares the
      // read would cost as much as the read itself (see docs/performance.md).
      pending = traced('token lookup', () => this.tokens.findByHash(hashToken(token)));
      this.thisTurn.set(token, pending);
    }
    return pending;
  }

  override authenticate(req: Request, options?: object): void {
    const headerOnly = { headers: { authorization: oneSpaceAfterScheme(req.headers.authorization) } } as Request;
    super.authenticate(headerOnly, options);
  }
}
