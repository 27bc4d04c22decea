import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';
import type { Metrics } from '../observability/metrics';
import { COUNT_TIMEOUT_MS, RateLimitStoreOutage, type ThrottlerStorageRecord } from './rate-limit-store-outage';

/**
 * One count per token and window for every process that shares it: INCR, and the window's
 * expiry set by the first hit, atomically.
 */
const HIT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { hits, ttl }
`;

/**
 * RATE_LIMIT's counts in Redis (or Valkey), shared by every worker of every instance: a fixed
 * window of one minute per token, counted by one atomic script. @nestjs/throttler's storage
 * interface; written here because the maintained Redis storage for it
 * (@nest-lab/throttler-storage-redis) does not declare Nest 12 among its peers, and the whole
 * job is the script above over ioredis.
 *
 * While Redis does not answer (down, unreachable, slower than COUNT_TIMEOUT_MS),
 * requests are let through uncounted (RateLimitStoreOutage). Commands are never queued while
 * disconnected: they fail at once, and ioredis reconnects in the background.
 */
export class RedisThrottlerStorage implements ThrottlerStorage, OnModuleInit, OnApplicationShutdown {
  private readonly redis: Redis;
  private readonly outage: RateLimitStoreOutage;

  constructor(url: string, metrics: Metrics) {
    this.outage = new RateLimitStoreOutage(metrics, 'the rate limit store answers again');
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COUNT_TIMEOUT_MS,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
      lazyConnect: false,
    });
    // Errors are answered by `increment`; ioredis would otherwise print each reconnect failure.
    this.redis.on('error', () => undefined);
  }

  /**
   * Waits, at start, for the connection (at most the connection timeout), so that the first
   * requests are counted; a Redis that does not answer by then does not stop the start.
   */
  async onModuleInit(): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.redis.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, 2_000);
      this.redis.once('ready', done);
    });
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    try {
      const [hits, remainingMs] = (await this.redis.eval(HIT, 1, `plant-store:rate:${throttlerName}:${key}`, ttl)) as [
        number,
        number,
      ];
      this.outage.counted();
      const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
      const isBlocked = hits > limit;
      return { totalHits: hits, timeToExpire: seconds, isBlocked, timeToBlockExpire: isBlocked ? seconds : 0 };
    } catch (error) {
      return this.outage.uncounted(
        ttl,
        `the rate limit store (RATE_LIMIT_REDIS_URL) does not answer (${(error as Error).message})`,
      );
    }
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }
}
