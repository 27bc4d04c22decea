import { type DynamicModule, type ExecutionContext, Inject, Injectable, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, type ThrottlerLimitDetail, ThrottlerModule, type ThrottlerStorage } from '@nestjs/throttler';
import type { Request } from 'express';
import type { AuthenticatedClient } from '../auth/bearer-auth';
import { CONFIG, type ConfigSlice, type RateLimitConfig } from '../config/configuration';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { Metrics } from '../observability/metrics';
import { RedisThrottlerStorage } from './redis-throttler.storage';

/** RATE_LIMIT per token (its name: every secret of one client counts once), after the bearer guard. */
@Injectable()
export class TokenThrottlerGuard extends ThrottlerGuard {
  // Properties, so that the constructor stays ThrottlerGuard's own.
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

@Module({})
class RedisCountsModule {
  static forRoot(redisUrl: string): DynamicModule {
    return {
      module: RedisCountsModule,
      providers: [
        {
          provide: RedisThrottlerStorage,
          inject: [Metrics],
          useFactory: (metrics: Metrics) => new RedisThrottlerStorage(redisUrl, metrics),
        },
      ],
      exports: [RedisThrottlerStorage],
    };
  }
}

/** Counted per instance, or in Redis for every instance sharing it. Imported only when RATE_LIMIT is set. */
@Module({})
export class RateLimitModule {
  static forRoot({ perMinute, counts }: RateLimitConfig): DynamicModule {
    const throttlers = [{ ttl: 60_000, limit: perMinute }];
    const throttler =
      counts === 'instance'
        ? ThrottlerModule.forRoot({ throttlers })
        : ThrottlerModule.forRootAsync({
            imports: [RedisCountsModule.forRoot(counts.redisUrl)],
            inject: [RedisThrottlerStorage],
            useFactory: (storage: ThrottlerStorage) => ({ throttlers, storage }),
          });
    return {
      module: RateLimitModule,
      imports: [throttler],
      providers: [{ provide: APP_GUARD, useClass: TokenThrottlerGuard }],
    };
  }
}
