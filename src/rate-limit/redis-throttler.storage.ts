import { once } from 'node:events';
import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';
import type { Metrics } from '../observability/metrics';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** How long a request waits for its count at most: past it, it is not limited. */
export const COUNT_TIMEOUT_MS = 500;

/** One count per token and window, its expiry set by the first hit, atomically. */
const HIT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { hits, ttl }
`;

/** @nest-lab/throttler-storage-redis supports Nest 11 at most. While Redis does not answer, requests go through uncounted. */
export class RedisThrottlerStorage implements ThrottlerStorage, OnModuleInit, OnApplicationShutdown {
  private readonly redis: Redis & { plantStoreHit(key: string, ttl: number): Promise<[number, number]> };
  private readonly logger = new Logger('RateLimit');
  private failing = false;

  constructor(
    url: string,
    private readonly metrics: Metrics,
  ) {
    this.redis = new Redis(url, {
      enableOfflineQueue: false, // fail at once while disconnected; ioredis reconnects meanwhile
      maxRetriesPerRequest: 0,
      commandTimeout: COUNT_TIMEOUT_MS,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    }) as RedisThrottlerStorage['redis'];
    this.redis.defineCommand('plantStoreHit', { numberOfKeys: 1, lua: HIT });
    this.redis.on('error', () => undefined); // answered by `increment`
  }

  /** At start, waits for the connection (2 s at most) so that the first requests are counted. */
  async onModuleInit(): Promise<void> {
    if (this.redis.status === 'ready') return;
    await once(this.redis, 'ready', { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _block: number,
    name: string,
  ): Promise<ThrottlerStorageRecord> {
    try {
      const [hits, remainingMs] = await this.redis.plantStoreHit(`plant-store:rate:${name}:${key}`, ttl);
      if (this.failing) {
        this.failing = false;
        this.logger.log('the rate limit store answers again: requests are limited again');
      }
      const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
      const isBlocked = hits > limit;
      return { totalHits: hits, timeToExpire: seconds, isBlocked, timeToBlockExpire: isBlocked ? seconds : 0 };
    } catch (error) {
      this.metrics.rateLimitStoreFailed();
      if (!this.failing) {
        this.failing = true;
        this.logger.warn(
          `the rate limit store (RATE_LIMIT_REDIS_URL) does not answer (${(error as Error).message}): requests are not limited until it does`,
        );
      }
      return { totalHits: 0, timeToExpire: Math.ceil(ttl / 1000), isBlocked: false, timeToBlockExpire: 0 };
    }
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }
}
