import type { SpanContext } from '@opentelemetry/api';
import { currentSpanContext, tracedBatch, tracing } from '../observability/tracing';
import type { StoreOutage } from './store-outage';
import { StoreUnavailableError } from '../errors/store-unavailable.error';

interface Waiter<T, R> {
  item: T;
  /** The span of the request it belongs to, when tracing is on: its commit's span links to it. */
  span: SpanContext | undefined;
  /** Past this, an item still waiting (for a busy store) is answered unavailable. */
  deadline: number;
  resolve(result: R): void;
  reject(error: unknown): void;
}

export interface GroupCommitOptions<T, R> {
  /**
   * Writes one batch in one commit and returns each item's result, in order: all of it is
   * committed, or (by throwing) none of it. Throwing StoreUnavailableError means the store
   * cannot answer now.
   */
  write(batch: readonly T[]): readonly R[] | Promise<readonly R[]>;
  outage: StoreOutage;
  /** At most this many items per batch. Default: no limit. */
  maxBatchSize?: number;
  /** At most this many batches being written at once. Default 1. */
  maxInFlight?: number;
  /**
   * When `write` fails because another process holds the store (`isBusy`), the batch is tried
   * again after `retryMs`, newer items joining it, until an item has waited `maxWaitMs`: that
   * item is then answered with `timedOut()`.
   */
  busy?: {
    isBusy(error: unknown): boolean;
    retryMs: number;
    maxWaitMs: number;
    timedOut(): StoreUnavailableError;
  };
}

/**
 * A batch this large is written at once, without waiting for the end of the turn. Under a storm
 * of connections one turn reads thousands of requests; waiting, alive, for one commit at the
 * turn's end, they would all be copied and promoted by the garbage collector, which would be
 * most of what a create costs at 3,000 connections. Committed early, a request's objects die
 * young. With 32 connections a turn never gathers this many, so nothing changes there. Measured
 * in docs/performance-log.md ("Storms: early batches").
 */
export const EARLY_BATCH_SIZE = 256;
/**
 * At most this many early batches per turn. Answers written mid-turn bring the next requests
 * on the same connections into the same turn, and libuv starts watching newly accepted
 * connections (and runs timers) only between turns: unbounded, a storm's late arrivals would
 * wait seconds for their first answer while the early ones were served again and again.
 */
export const EARLY_BATCHES_PER_TURN = 32;

/**
 * Group commit, for both stores: items that arrive in one turn of the event loop are written in
 * one commit (one fsync on SQLite, one round trip on PostgreSQL), or in batches of
 * EARLY_BATCH_SIZE as they fill, and none is answered before its commit returns. Every waiter is
 * settled, with its result or the batch's failure; a failure that means the store is unavailable
 * starts an outage (StoreOutage) and answers the items queued behind the batch at once, and a
 * commit that succeeds ends it.
 */
export class GroupCommit<T, R> {
  private queue: Waiter<T, R>[] = [];
  /** What will write the queue next: the end of this turn, or a retry while the store is busy. */
  private scheduled: 'turn' | 'retry' | undefined;
  /** Early batches written since the last end of a turn. */
  private earlyBatches = 0;
  private inFlight = 0;
  private readonly maxBatchSize: number;
  private readonly maxInFlight: number;

  constructor(private readonly options: GroupCommitOptions<T, R>) {
    this.maxBatchSize = options.maxBatchSize ?? Infinity;
    this.maxInFlight = options.maxInFlight ?? 1;
  }

  /** Resolves with the item's result once its batch is committed. */
  enqueue(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      const deadline = Date.now() + (this.options.busy?.maxWaitMs ?? 0);
      this.queue.push({ item, deadline, span: tracing.on ? currentSpanContext() : undefined, resolve, reject });
      if (this.mayCommitEarly()) {
        this.earlyBatches++;
        this.flush();
      } else {
        this.schedule(0);
      }
    });
  }

  /** A full early batch, a free commit slot, the turn's allowance left, and no busy store. */
  private mayCommitEarly(): boolean {
    return (
      this.queue.length >= EARLY_BATCH_SIZE &&
      this.inFlight < this.maxInFlight &&
      this.earlyBatches < EARLY_BATCHES_PER_TURN &&
      this.scheduled !== 'retry'
    );
  }

  /** `delayMs` 0: the end of this turn of the event loop, so that items arriving in it join. */
  private schedule(delayMs: number): void {
    if (this.scheduled !== undefined) return;
    this.scheduled = delayMs === 0 ? 'turn' : 'retry';
    const flush = (): void => {
      this.scheduled = undefined;
      this.earlyBatches = 0;
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

  /** Never rejects: every waiter of the batch is settled, or the batch goes back to wait. */
  private async commit(batch: Waiter<T, R>[]): Promise<void> {
    let results: readonly R[];
    const started = process.hrtime.bigint();
    const epoch = this.options.outage.epoch;
    try {
      const write = async (): Promise<readonly R[]> => this.options.write(batch.map((waiter) => waiter.item));
      results = await (tracing.on ? tracedBatch('store commit', batch, write) : write());
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
        // Those queued behind it would each wait a commit bound to learn the same; only news of
        // a store that has since come back leaves them to try.
        if (epoch === this.options.outage.epoch) this.queue.splice(0).forEach((waiter) => waiter.reject(error));
      }
      return;
    }
    this.options.outage.committed(batch.length, Number(process.hrtime.bigint() - started) / 1e9);
    batch.forEach((waiter, i) => waiter.resolve(results[i]));
  }

  private expire(): void {
    const busy = this.options.busy;
    if (busy === undefined) return;
    const now = Date.now();
    const expired = this.queue.filter((waiter) => waiter.deadline <= now);
    if (expired.length === 0) return;
    this.queue = this.queue.filter((waiter) => waiter.deadline > now);
    const error = busy.timedOut();
    this.options.outage.failed(error);
    for (const waiter of expired) waiter.reject(error);
  }
}
