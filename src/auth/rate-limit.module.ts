import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { Metrics } from '../metrics/metrics';
import { RedisThrottlerStorage } from './redis-throttler.storage';
import { TokenThrottlerGuard } from './token-throttler.guard';

const MINUTE_MS = 60_000;

/** RedisThrottlerStorage as a provider, so that the application closes its connection. */
@Module({})
class RateLimitStoreModule {
  static forRoot(redisUrl: string): DynamicModule {
    return {
      module: RateLimitStoreModule,
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

/**
 * RATE_LIMIT requests per minute per token, by @nestjs/throttler: counted in Redis for the
 * whole fleet when RATE_LIMIT_REDIS_URL is set (RedisThrottlerStorage), else in this process's
 * memory. Imported only when RATE_LIMIT is set: its guard runs after the bearer guard (see
 * AppModule), so the bearer guard has said whose token it is before this one counts.
 * Routes marked `@Public()` are never limited.
 */
@Module({})
export class RateLimitModule {
  static forRoot(limit: number, redisUrl: string | undefined): DynamicModule {
    const throttlers = [{ ttl: MINUTE_MS, limit }];
    const counts =
      redisUrl === undefined
        ? ThrottlerModule.forRoot({ throttlers })
        : ThrottlerModule.forRootAsync({
            imports: [RateLimitStoreModule.forRoot(redisUrl)],
            inject: [RedisThrottlerStorage],
            useFactory: (storage: RedisThrottlerStorage) => ({ throttlers, storage }),
          });
    return {
      module: RateLimitModule,
      imports: [counts],
      providers: [{ provide: APP_GUARD, useClass: TokenThrottlerGuard }],
    };
  }
}
