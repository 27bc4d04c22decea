import { type ExecutionContext, Inject, Injectable, Module, type Provider } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, type ThrottlerLimitDetail, ThrottlerModule } from '@nestjs/throttler';
import type { Request } from 'express';
import type { AuthenticatedClient } from '../auth/bearer-auth';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { Metrics } from '../observability/metrics';
import { RedisThrottlerStorage } from './redis-throttler.storage';

/** RATE_LIMIT per token (its name: every secret of one client counts once), after the bearer guard. */
@Injectable()
export class TokenThrottlerGuard extends ThrottlerGuard {
  // Properties, so that the constructor stays ThrottlerGuard's own.
  @Inject(Metrics) private readonly metrics!: Metrics;
  @Inject(APP_CONFIG) private readonly config!: AppConfig;

  protected override getTracker(request: Record<string, unknown>): Promise<string> {
    return Promise.resolve((request as unknown as Request & { user: AuthenticatedClient }).user.tokenName);
  }

  protected override throwThrottlingException(_context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    this.metrics.rateLimitRefused();
    const retryAfter = Math.max(1, Math.ceil(detail.timeToBlockExpire));
    const where =
      this.config.rateLimit?.counts === 'instance' ? 'on this instance' : 'across every instance sharing its count';
    throw new ApiError(
      ErrorCode.TooManyRequests,
      `Rate limit reached: at most ${detail.limit} requests per minute per token ${where} (RATE_LIMIT); retry in ${retryAfter} s`,
      { 'Retry-After': String(retryAfter) },
    );
  }
}

/** Redis's counts, when RATE_LIMIT_REDIS_URL names it; null while each instance counts its own. */
@Module({
  providers: [
    {
      provide: RedisThrottlerStorage,
      inject: [APP_CONFIG, Metrics],
      useFactory: ({ rateLimit }: AppConfig, metrics: Metrics) =>
        typeof rateLimit?.counts === 'object' ? new RedisThrottlerStorage(rateLimit.counts.redisUrl, metrics) : null,
    },
  ],
  exports: [RedisThrottlerStorage],
})
class RedisCountsModule {}

/** RATE_LIMIT, counted per instance or in Redis for every instance sharing it; while it is unset, no guard at all. */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      imports: [RedisCountsModule],
      inject: [APP_CONFIG, RedisThrottlerStorage],
      useFactory: ({ rateLimit }: AppConfig, redis: RedisThrottlerStorage | null) => ({
        throttlers: [{ ttl: 60_000, limit: rateLimit?.perMinute ?? 0 }],
        storage: redis ?? undefined,
      }),
    }),
  ],
  providers: [TokenThrottlerGuard],
  exports: [TokenThrottlerGuard],
})
export class RateLimitModule {}

/**
 * RATE_LIMIT's global guard, for AppModule's list of them; none while it is unset (Nest skips a
 * global guard whose factory gives null: one that passed every request would cost each).
 */
export const rateLimitGuard: Provider = {
  provide: APP_GUARD,
  inject: [APP_CONFIG, TokenThrottlerGuard],
  useFactory: ({ rateLimit }: AppConfig, guard: TokenThrottlerGuard) => (rateLimit === undefined ? null : guard),
};
