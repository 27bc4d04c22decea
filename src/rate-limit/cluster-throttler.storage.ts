import type { Cluster, Worker } from 'node:cluster';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Metrics } from '../observability/metrics';
import { COUNT_TIMEOUT_MS, RateLimitStoreOutage, type ThrottlerStorageRecord } from './rate-limit-store-outage';

type IncrementArguments = Parameters<ThrottlerStorage['increment']>;

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
 * primary not answer within COUNT_TIMEOUT_MS, the request is let through uncounted, as with
 * Redis (RateLimitStoreOutage).
 */
export class ClusterThrottlerStorage implements ThrottlerStorage {
  private readonly waiting = new Map<number, (record: ThrottlerStorageRecord) => void>();
  private readonly outage: RateLimitStoreOutage;
  private nextId = 0;

  constructor(metrics: Metrics) {
    this.outage = new RateLimitStoreOutage(metrics, 'the primary counts again');
    process.on('message', (message: unknown) => {
      if (!isMessage<CountedMessage>(message, COUNTED)) return;
      this.waiting.get(message.id)?.(message.record);
    });
  }

  increment(...hit: IncrementArguments): Promise<ThrottlerStorageRecord> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        const [, ttl] = hit;
        resolve(this.outage.uncounted(ttl, `the primary did not count a request in ${COUNT_TIMEOUT_MS} ms`));
      }, COUNT_TIMEOUT_MS);
      this.waiting.set(id, (record) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        this.outage.counted();
        resolve(record);
      });
      process.send?.({ type: HIT, id, hit } satisfies HitMessage);
    });
  }
}
