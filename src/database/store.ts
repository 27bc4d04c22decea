import { type ObjectLiteral, QueryFailedError, type Repository } from 'typeorm';
import { answeredWithin, StoreUnavailableError } from '../errors/api-error';
import { traced } from '../observability/tracing';
import { GroupCommit } from './group-commit';
import type { StoreDialect } from './store-kind';
import type { StoreOutage } from './store-outage';

/** A batch that waited this long for a store taken by another writer is answered unavailable. */
const BUSY_WAIT_MS = 5000;

/** Another writer holds the store for about one commit; backing off further lengthens p99. */
const BUSY_RETRY_MS = 1;

/**
 * The open store as a feature uses it beside its repositories: the driver's failures classified,
 * an outage noted, every wait bounded, and the writes of one event-loop turn committed together.
 */
export class Store {
  /** The last transaction begun, where a store runs one at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly dialect: StoreDialect,
    readonly outage: StoreOutage,
    /** Whether its work is traced (OTEL_EXPORTER_OTLP_ENDPOINT set). */
    private readonly tracing = false,
  ) {}

  /** `work` in a span named `name`, while tracing is on. */
  span<T>(name: string, work: () => Promise<T>): Promise<T> {
    return this.tracing ? traced(name, work) : work();
  }

  /** `write` commits one batch in one transaction and returns each item's result. */
  groupCommit<T, R>(write: (batch: readonly T[]) => Promise<readonly R[]>, maxBatchSize: number): GroupCommit<T, R> {
    const { dialect } = this;
    return new GroupCommit({
      write: async (batch) => {
        try {
          return await this.bounded(write(batch));
        } catch (error) {
          throw this.failure(error);
        }
      },
      outage: this.outage,
      traced: this.tracing,
      maxBatchSize,
      maxInFlight: dialect.transactionsAtOnce,
      busy: {
        isBusy: (error) => dialect.isBusy(error),
        retryMs: BUSY_RETRY_MS,
        maxWaitMs: BUSY_WAIT_MS,
        timedOut: () => new StoreUnavailableError(`${dialect.busyWith} for ${BUSY_WAIT_MS} ms`),
      },
    });
  }

  /**
   * `work` in one transaction, on `repository`'s store; where the store runs one at a time (SQLite's
   * one connection), after the one before has ended: begun beside it, it would be its savepoint.
   */
  transaction<E extends ObjectLiteral, T>(
    repository: Repository<E>,
    work: (repository: Repository<E>) => Promise<T>,
  ): Promise<T> {
    const run = (): Promise<T> => {
      let worked = (): void => undefined;
      const workDone = new Promise<void>((resolve) => (worked = resolve));
      const committed = repository.manager.transaction(async (manager) => {
        const result = await work(manager.getRepository(repository.target));
        worked();
        return result;
      });
      return this.commitBounded(committed, workDone);
    };
    if (this.dialect.transactionsAtOnce > 1) return run();
    const result = this.queue.then(run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Whether a turn's reads are best gathered into one: each costs a transaction (PostgreSQL), or an index probe. */
  get gathersReads(): boolean {
    return this.dialect.readsInTransaction;
  }

  /** `read` on `repository`'s store, with its failure classified and an outage it shows noted. */
  async read<E extends ObjectLiteral, T>(
    repository: Repository<E>,
    read: (repository: Repository<E>) => Promise<T>,
  ): Promise<T> {
    const epoch = this.outage.epoch;
    try {
      return await this.bounded(
        this.dialect.readsInTransaction ? this.transaction(repository, read) : read(repository),
      );
    } catch (error) {
      throw this.outage.report(this.failure(error), epoch);
    }
  }

  /** A commit not answered within `commitWaitMs` of its work's end (a synchronous standby that does not answer) is given up. */
  private commitBounded<T>(committed: Promise<T>, workDone: Promise<void>): Promise<T> {
    const ms = this.dialect.commitWaitMs;
    if (ms === undefined) return committed;
    const reason = `the commit did not complete within ${ms} ms (waiting for a synchronous standby?)`;
    return Promise.race([committed, workDone.then(() => answeredWithin(committed, ms, reason))]);
  }

  /** A store that stopped answering cannot fire its own bounds. */
  private bounded<T>(work: Promise<T>): Promise<T> {
    const ms = this.dialect.answerWaitMs;
    return ms === undefined ? work : answeredWithin(work, ms, `no answer within ${ms} ms`);
  }

  private failure(error: unknown): unknown {
    const cause = error instanceof QueryFailedError ? (error.driverError as unknown) : error;
    return this.dialect.isBusy(cause) ? cause : this.dialect.failure(cause);
  }
}
