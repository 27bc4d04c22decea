import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule, type ThrottlerStorage } from '@nestjs/throttler';
import { Metrics } from '../metrics/metrics';
import { ClusterThrottlerStorage } from './cluster-throttler.storage';
import { RedisThrottlerStorage } from './redis-throttler.storage';
import { TokenThrottlerGuard } from './token-throttler.guard';

const MINUTE_MS = 60_000;

const RATE_LIMIT_STORAGE = Symbol('RATE_LIMIT_STORAGE');

/** Where RATE_LIMIT's counts are kept: see RateLimitModule. */
export type RateLimitCounts = 'process' | 'cluster' | { readonly redisUrl: string };

/**
 * The counts' storage as a provider (so that the application closes Redis's connection), or
 * none: @nestjs/throttler's own in-memory storage then.
 */
@Module({})
class RateLimitStoreModule {
  static forRoot(counts: 'cluster' | { readonly redisUrl: string }): DynamicModule {
    return {
      module: RateLimitStoreModule,
      providers: [
        {
          provide: RATE_LIMIT_STORAGE,
          inject: [Metrics],
          useFactory: (metrics: Metrics): ThrottlerStorage =>
            counts === 'cluster'
              ? new ClusterThrottlerStorage(metrics)
              : new RedisThrottlerStorage(counts.redisUrl, metrics),
        },
      ],
      exports: [RATE_LIMIT_STORAGE],
    };
  }
}

/**
 * RATE_LIMIT requests per minute per token, by @nestjs/throttler, counted
 * - in Redis for the whole fleet when RATE_LIMIT_REDIS_URL is set (RedisThrottlerStorage);
 * - else by the cluster's primary for every worker of the instance under WORKERS
 *   (ClusterThrottlerStorage);
 * - else in this process's memory.
 * Imported only when RATE_LIMIT is set: its guard runs after the bearer guard (see AppModule),
 * so the bearer guard has said whose token it is before this one counts. Routes marked
 * `@Public()` are never limited.
 */
@Module({})
export class RateLimitModule {
  static forRoot(limit: number, counts: RateLimitCounts): DynamicModule {
    const throttlers = [{ ttl: MINUTE_MS, limit }];
    const throttler =
      counts === 'process'
        ? ThrottlerModule.forRoot({ throttlers })
        : ThrottlerModule.forRootAsync({
            imports: [RateLimitStoreModule.forRoot(counts)],
            inject: [RATE_LIMIT_STORAGE],
            useFactory: (storage: ThrottlerStorage) => ({ throttlers, storage }),
          });
    return {
      module: RateLimitModule,
      imports: [throttler],
      providers: [{ provide: APP_GUARD, useClass: TokenThrottlerGuard }],
    };
  }
}
