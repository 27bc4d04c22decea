import { type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail } from '@nestjs/throttler';
import type { Request } from 'express';
import { CONFIG, type ConfigSlice } from '../config/configuration';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { Metrics } from '../observability/metrics';
import type { AuthenticatedClient } from '../auth/bearer-auth';

/**
 * RATE_LIMIT, through @nestjs/throttler: requests per minute per token (by token name, so every
 * secret of one client counts once), counted where RateLimitModule says. Applied to the routes
 * that need a token, after the bearer guard has said whose token it is.
 */
@Injectable()
export class TokenThrottlerGuard extends ThrottlerGuard {
  // A property, so the constructor stays ThrottlerGuard's own.
  @Inject(Metrics) private readonly metrics!: Metrics;
  @Inject(CONFIG.rateLimit) private readonly rateLimit!: ConfigSlice<'rateLimit'>;

  protected override getTracker(request: Record<string, unknown>): Promise<string> {
    return Promise.resolve((request as unknown as Request & { user: AuthenticatedClient }).user.tokenName);
  }

  protected override throwThrottlingException(_context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    this.metrics.rateLimitRefused();
    const retryAfter = Math.max(1, Math.ceil(detail.timeToBlockExpire));
    const where = this.rateLimit.counts === 'instance' ? 'on this instance' : 'across every instance sharing its count';
    throw new ApiError(
      ErrorCode.TooManyRequests,
      `Rate limit reached: at most ${detail.limit} requests per minute per token ${where} (RATE_LIMIT); retry in ${retryAfter} s`,
      { 'Retry-After': String(retryAfter) },
    );
  }
}
