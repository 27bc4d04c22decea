import cluster from 'node:cluster';
import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule, type ThrottlerStorage } from '@nestjs/throttler';
import type { RateLimitConfig } from '../config/configuration';
import { Metrics } from '../observability/metrics';
import { ClusterThrottlerStorage } from './cluster-throttler.storage';
import { RedisThrottlerStorage } from './redis-throttler.storage';
import { TokenThrottlerGuard } from './token-throttler.guard';

const MINUTE_MS = 60_000;

const RATE_LIMIT_STORAGE = Symbol('RATE_LIMIT_STORAGE');

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
 * RATE_LIMIT requests per minute per token, by @nestjs/throttler, counted where the configuration
 * says (`RateLimitConfig.counts`):
 * - in Redis for the whole fleet (RedisThrottlerStorage);
 * - by the instance: under WORKERS by the cluster's primary for every worker
 *   (ClusterThrottlerStorage, the primary's side started by `main.ts`), else in this process's
 *   memory.
 * Imported only when RATE_LIMIT is set: its guard runs after the bearer guard (see AppModule),
 * so the bearer guard has said whose token it is before this one counts. Routes marked
 * `@Public()` are never limited.
 */
@Module({})
export class RateLimitModule {
  static forRoot({ perMinute, counts: where }: RateLimitConfig): DynamicModule {
    const throttlers = [{ ttl: MINUTE_MS, limit: perMinute }];
    const counts = where === 'instance' ? (cluster.isWorker ? 'cluster' : 'process') : where;
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
