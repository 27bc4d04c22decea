import { Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Metrics } from '../observability/metrics';

export type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * How long a request waits for its count at most (from Redis, or the cluster's primary): past
 * it, it is not limited.
 */
export const COUNT_TIMEOUT_MS = 500;

/**
 * What a rate-limit storage does while its counts cannot be had (Redis, or the cluster's
 * primary, not answering): a limiter that fails should not take the service down with it, so
 * the request is let through uncounted; the outage is logged once when it starts and once when
 * it ends, and each request that went uncounted is counted in
 * `plant_store_rate_limit_store_errors_total`.
 */
export class RateLimitStoreOutage {
  private readonly logger = new Logger('RateLimit');
  private failing = false;

  /** `answersAgain`: who answers again, said when the outage ends. */
  constructor(
    private readonly metrics: Metrics,
    private readonly answersAgain: string,
  ) {}

  /** A hit was counted: ends the outage, if one was under way. */
  counted(): void {
    if (!this.failing) return;
    this.failing = false;
    this.logger.log(`${this.answersAgain}: requests are limited again`);
  }

  /** A hit could not be counted (`why`, said when the outage starts): the record that lets it through. */
  uncounted(ttl: number, why: string): ThrottlerStorageRecord {
    this.metrics.rateLimitStoreFailed();
    if (!this.failing) {
      this.failing = true;
      this.logger.warn(`${why}: requests are not limited until it does`);
    }
    return { totalHits: 0, timeToExpire: Math.ceil(ttl / 1000), isBlocked: false, timeToBlockExpire: 0 };
  }
}
