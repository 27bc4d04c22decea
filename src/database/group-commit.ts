import type { SpanContext } from '@opentelemetry/api';
import { StoreUnavailableError } from '../errors/api-error';
import { currentSpanContext, tracedBatch } from '../observability/tracing';
import type { StoreOutage } from './store-outage';

interface Waiter<T, R> {
  item: T;
  span: SpanContext | undefined;
  /** Past this, an item still waiting for a busy store is answered unavailable. */
  deadline: number;
  resolve(result: R): void;
  reject(error: unknown): void;
}

export interface GroupCommitOptions<T, R> {
  /** Writes one batch in one commit and returns each item's result: all of it, or (throwing) none. */
  write(batch: readonly T[]): readonly R[] | Promise<readonly R[]>;
  outage: StoreOutage;
  maxBatchSize?: number;
  maxInFlight?: number;
  /** Each commit a span, linked to its requests' (OTEL_EXPORTER_OTLP_ENDPOINT set). */
  traced?: boolean;
  /** Another process holds the store: the batch is tried again after `retryMs`, for at most `maxWaitMs`. */
  busy?: { isBusy(error: unknown): boolean; retryMs: number; maxWaitMs: number; timedOut(): StoreUnavailableError };
}

/**
 * What arrives in one event-loop turn is written in one commit, and nothing is answered before it
 * returns. An unavailable store starts an outage and fails the items queued behind at once.
 */
export class GroupCommit<T, R> {
  private queue: Waiter<T, R>[] = [];
  private scheduled: 'turn' | 'retry' | undefined;
  private inFlight = 0;
  private readonly maxBatchSize: number;
  private readonly maxInFlight: number;

  constructor(private readonly options: GroupCommitOptions<T, R>) {
    this.maxBatchSize = options.maxBatchSize ?? Infinity;
    this.maxInFlight = options.maxInFlight ?? 1;
  }

  enqueue(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      const deadline = Date.now() + (this.options.busy?.maxWaitMs ?? 0);
      this.queue.push({
        item,
        deadline,
        span: this.options.traced ? currentSpanContext() : undefined,
        resolve,
        reject,
      });
      this.schedule(0);
    });
  }

  /** `delayMs` 0: at the end of this turn, so that what arrives in it joins. */
  private schedule(delayMs: number): void {
    if (this.scheduled !== undefined) return;
    this.scheduled = delayMs === 0 ? 'turn' : 'retry';
    const flush = (): void => {
      this.scheduled = undefined;
      this.flush();
    };
    if (delayMs === 0) setImmediate(flush);
    else setTimeout(flush, delayMs);
  }

  private flush(): void {
    this.expire();
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatchSize);
      this.inFlight++;
      void this.commit(batch).finally(() => {
        this.inFlight--;
        if (this.queue.length > 0) this.schedule(0);
      });
    }
  }

  /** Never rejects: every waiter is settled, or the batch goes back to wait. */
  private async commit(batch: Waiter<T, R>[]): Promise<void> {
    let results: readonly R[];
    const started = process.hrtime.bigint();
    const epoch = this.options.outage.epoch;
    try {
      const write = async (): Promise<readonly R[]> => this.options.write(batch.map((waiter) => waiter.item));
      results = await (this.options.traced ? tracedBatch('store commit', batch, write) : write());
    } catch (error) {
      const busy = this.options.busy;
      if (busy?.isBusy(error)) {
        // Nothing was written: the batch waits at the head of the queue, newer items behind it.
        this.queue = batch.concat(this.queue);
        this.schedule(busy.retryMs);
        return;
      }
      for (const waiter of batch) waiter.reject(error);
      if (error instanceof StoreUnavailableError) {
        this.options.outage.failed(error, epoch);
        // Those queued behind would each wait a bound to learn the same, unless the store came back meanwhile.
        if (epoch === this.options.outage.epoch) this.queue.splice(0).forEach((waiter) => waiter.reject(error));
      }
      return;
    }
    this.options.outage.committed(batch.length, Number(process.hrtime.bigint() - started) / 1e9);
    batch.forEach((waiter, i) => waiter.resolve(results[i]));
  }

  private expire(): void {
    const busy = this.options.busy;
    if (busy === undefined || this.queue.length === 0 || this.queue[0].deadline > Date.now()) return;
    const now = Date.now();
    const expired = this.queue.filter((waiter) => waiter.deadline <= now);
    this.queue = this.queue.filter((waiter) => waiter.deadline > now);
    const error = busy.timedOut();
    this.options.outage.failed(error);
    for (const waiter of expired) waiter.reject(error);
  }
}
