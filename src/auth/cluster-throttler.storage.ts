import type { Cluster, Worker } from 'node:cluster';
import { Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Metrics } from '../metrics/metrics';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;
type IncrementArguments = Parameters<ThrottlerStorage['increment']>;

/** How long a worker waits for the primary's count at most: past it, the request is not limited. */
export const CLUSTER_COUNT_TIMEOUT_MS = 500;

const HIT = 'plant-store:rate-limit-hit';
const COUNTED = 'plant-store:rate-limit-counted';

interface HitMessage {
  readonly type: typeof HIT;
  readonly id: number;
  readonly hit: IncrementArguments;
}

interface CountedMessage {
  readonly type: typeof COUNTED;
  readonly id: number;
  readonly record: ThrottlerStorageRecord;
}

function isMessage<T extends { type: string }>(message: unknown, type: T['type']): message is T {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;
}

/**
 * Under WORKERS without RATE_LIMIT_REDIS_URL, the primary keeps the instance's one count, in
 * @nestjs/throttler's own in-memory storage, and answers each worker's hit over the cluster's
 * IPC channel: so RATE_LIMIT means per instance, whatever the number of workers. Hand-written
 * because no maintained throttler storage speaks node:cluster's channel; the counting itself
 * is the library's. Loaded by the primary only when it is needed.
 */
export async function keepRateLimitCounts(cluster: Cluster): Promise<void> {
  const { ThrottlerStorageService } = await import('@nestjs/throttler');
  const counts = new ThrottlerStorageService();
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (!isMessage<HitMessage>(message, HIT)) return;
    void counts.increment(...message.hit).then((record) => {
      // A worker that exited meanwhile has no one to read the answer.
      if (worker.isConnected()) worker.send({ type: COUNTED, id: message.id, record } satisfies CountedMessage);
    });
  });
}

/**
 * A worker's side: each hit is counted by the primary (see keepRateLimitCounts). Should the
 * primary not answer within CLUSTER_COUNT_TIMEOUT_MS, the request is let through uncounted,
 * logged once and counted in `plant_store_rate_limit_store_errors_total`, as with Redis.
 */
export class ClusterThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimit');
  private readonly waiting = new Map<number, (record: ThrottlerStorageRecord) => void>();
  private nextId = 0;
  private failing = false;

  constructor(private readonly metrics: Metrics) {
    process.on('message', (message: unknown) => {
      if (!isMessage<CountedMessage>(message, COUNTED)) return;
      this.waiting.get(message.id)?.(message.record);
    });
  }

  increment(...hit: IncrementArguments): Promise<ThrottlerStorageRecord> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const answered = (record: ThrottlerStorageRecord): void => {
        clearTimeout(timer);
        this.waiting.delete(id);
        if (this.failing) {
          this.failing = false;
          this.logger.log('the primary counts again: requests are limited again');
        }
        resolve(record);
      };
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        this.metrics.rateLimitStoreFailed();
        if (!this.failing) {
          this.failing = true;
          this.logger.warn(
            `the primary did not count a request in ${CLUSTER_COUNT_TIMEOUT_MS} ms: requests are not limited until it does`,
          );
        }
        const [, ttl] = hit;
        resolve({ totalHits: 0, timeToExpire: Math.ceil(ttl / 1000), isBlocked: false, timeToBlockExpire: 0 });
      }, CLUSTER_COUNT_TIMEOUT_MS);
      this.waiting.set(id, answered);
      process.send?.({ type: HIT, id, hit } satisfies HitMessage);
    });
  }
}
