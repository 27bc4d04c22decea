import { Inject, Injectable } from '@nestjs/common';
import type { SpanContext } from '@opentelemetry/api';
import { DataSource, type EntityManager, QueryFailedError } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { answeredWithin, StoreUnavailableError } from '../errors/api-error';
import { Metrics } from '../observability/metrics';
import { currentSpanContext, tracedBatch } from '../observability/tracing';
import { STORE_KIND, type StoreDialect } from './store-kind';
import { StoreOutage } from './store-outage';

/** How long a batch waits for a store another writer holds, trying again each ms (it holds it about a commit). */
const [BUSY_WAIT_MS, BUSY_RETRY_MS] = [5000, 1];

/**
 * The open store as the features use it beside their repositories: a transaction or a read, every
 * wait bounded, the driver's failures told apart (StoreUnavailableError is a 503), an outage noted.
 */
@Injectable()
export class Store {
  private last: Promise<unknown> = Promise.resolve(); // where one runs at a time (SQLite's one connection)
  readonly tracing: boolean;

  constructor(
    @Inject(STORE_KIND) readonly dialect: StoreDialect,
    private readonly dataSource: DataSource,
    readonly outage: StoreOutage,
    readonly metrics: Metrics,
    @Inject(APP_CONFIG) config: Partial<Pick<AppConfig, 'tracing'>>,
  ) {
    this.tracing = config.tracing !== undefined;
  }

  /** `work` in one transaction; where the store runs one at a time, after the one before has ended (begun beside it, it would be its savepoint). */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    const run = (): Promise<T> => this.classified(this.committed(work));
    if (this.dialect.transactionsAtOnce > 1) return run();
    const result = this.last.then(run);
    this.last = result.catch(() => undefined);
    return result;
  }

  /** `read`, with an outage it shows noted; in a transaction where the store's bounds need one (PostgreSQL's are SET LOCAL). */
  async read<T>(read: (manager: EntityManager) => Promise<T>): Promise<T> {
    const epoch = this.outage.epoch;
    try {
      const { readsInTransaction } = this.dialect;
      return await (readsInTransaction ? this.transaction(read) : this.classified(read(this.dataSource.manager)));
    } catch (error) {
      throw this.outage.report(error, epoch);
    }
  }

  /** A commit not answered `commitWaitMs` after its work (a synchronous standby that does not answer) is given up. */
  private committed<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    let worked = (): void => undefined;
    const workDone = new Promise<void>((resolve) => (worked = resolve));
    const committed = this.dataSource.transaction(async (manager) => {
      const result = await work(manager);
      worked();
      return result;
    });
    const ms = this.dialect.commitWaitMs;
    if (ms === undefined) return committed;
    const reason = `the commit did not complete within ${ms} ms (waiting for a synchronous standby?)`;
    return Promise.race([committed, workDone.then(() => answeredWithin(committed, ms, reason))]);
  }

  /** Bounded (a store that stopped answering cannot fire its own bounds), and its failure told apart. */
  private async classified<T>(work: Promise<T>): Promise<T> {
    const ms = this.dialect.answerWaitMs;
    try {
      return await (ms === undefined ? work : answeredWithin(work, ms, `no answer within ${ms} ms`));
    } catch (error) {
      const cause = error instanceof QueryFailedError ? (error.driverError as unknown) : error;
      throw this.dialect.isBusy(cause) ? cause : this.dialect.failure(cause);
    }
  }
}

/** An item waiting for its commit; past `deadline`, waiting on a store another writer holds, it fails. */
type Waiter<T, R> = PromiseWithResolvers<R> & { item: T; span: SpanContext | undefined; deadline: number };

/**
 * What arrives in one event-loop turn is written by `write` in one transaction (`maxBatchSize` at
 * most), answered once it commits. A store another writer holds is tried again every millisecond,
 * for 5 s at most; an unavailable one starts an outage, and what waits behind fails at once.
 */
export class GroupCommit<T, R> {
  private queue: Waiter<T, R>[] = [];
  private scheduled?: NodeJS.Immediate | NodeJS.Timeout;
  private inFlight = 0;

  constructor(
    private readonly store: Store,
    private readonly write: (batch: readonly T[], manager: EntityManager) => Promise<readonly R[]>,
    private readonly maxBatchSize: number,
  ) {}

  /** Resolves with `item`'s result once its batch has committed. */
  add(item: T): Promise<R> {
    const span = this.store.tracing ? currentSpanContext() : undefined;
    const waiter = { ...Promise.withResolvers<R>(), item, span, deadline: Date.now() + BUSY_WAIT_MS };
    this.queue.push(waiter);
    this.schedule(0);
    return waiter.promise;
  }

  /** `delayMs` 0: at the end of this turn, so that what arrives in it joins. */
  private schedule(delayMs: number): void {
    const flush = (): void => {
      this.scheduled = undefined;
      this.flush();
    };
    this.scheduled ??= delayMs === 0 ? setImmediate(flush) : setTimeout(flush, delayMs);
  }

  private flush(): void {
    const now = Date.now();
    if (this.queue.length > 0 && this.queue[0].deadline <= now) {
      const late = new StoreUnavailableError(`${this.store.dialect.busyWith} for ${BUSY_WAIT_MS} ms`);
      this.store.outage.failed(late);
      for (const waiter of this.queue.filter((waiter) => waiter.deadline <= now)) waiter.reject(late);
      this.queue = this.queue.filter((waiter) => waiter.deadline > now);
    }
    while (this.inFlight < this.store.dialect.transactionsAtOnce && this.queue.length > 0) {
      this.inFlight++;
      void this.commit(this.queue.splice(0, this.maxBatchSize)).finally(() => {
        this.inFlight--;
        if (this.queue.length > 0) this.schedule(0);
      });
    }
  }

  /** Never rejects: every waiter is settled, or the batch goes back to wait. */
  private async commit(batch: Waiter<T, R>[]): Promise<void> {
    const { store } = this;
    const [started, epoch, items] = [process.hrtime.bigint(), store.outage.epoch, batch.map((waiter) => waiter.item)];
    const write = (): Promise<readonly R[]> => store.transaction((manager) => this.write(items, manager));
    let results: readonly R[];
    try {
      results = await (store.tracing ? tracedBatch('store commit', batch, write) : write());
    } catch (error) {
      if (store.dialect.isBusy(error)) {
        // Nothing was written: the batch waits at the head of the queue, newer items behind it.
        this.queue = batch.concat(this.queue);
        return this.schedule(BUSY_RETRY_MS);
      }
      for (const waiter of batch) waiter.reject(error);
      if (error instanceof StoreUnavailableError) {
        store.outage.failed(error, epoch);
        // Those queued behind would each wait a bound to learn the same, unless the store came back meanwhile.
        if (epoch === store.outage.epoch) this.queue.splice(0).forEach((waiter) => waiter.reject(error));
      }
      return;
    }
    store.metrics.committed(batch.length, Number(process.hrtime.bigint() - started) / 1e9);
    if (store.outage.active) store.outage.recovered();
    batch.forEach((waiter, i) => waiter.resolve(results[i]));
  }
}
