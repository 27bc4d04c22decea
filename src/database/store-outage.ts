import type { Metrics } from '../observability/metrics';
import { StoreUnavailableError } from '../errors/store-unavailable.error';

/** Where an outage is told: the application's log (Nest's `Logger`, context "Store"). */
export interface OutageLog {
  error(message: object): void;
  log(message: object): void;
}

/**
 * Logs a store outage twice: when it starts (the first failure, with its cause) and when it
 * ends (with its length). A failure of an attempt that began before the store came back (a
 * create waiting on a connection since the outage) starts no new one. Every request that meets the outage answers 503, but none writes a
 * log line of its own beyond its request line: an outage of a minute under load would otherwise
 * write a stack trace per request. Any store operation, and the health check, may report a
 * failure; only evidence that the store takes writes ends it: a durable create, or StoreRecovery's
 * own check, which runs while the outage lasts so that it ends without traffic. A read that works
 * (a token lookup while another process holds the write lock) does not.
 *
 * The metrics hear the same: `plant_store_store_up`, and every commit's size and duration.
 *
 * No framework here: an operator command (`plants export`) keeps a store with an outage of its
 * own, told to nobody (its failure ends the command, with its message), and loads no Nest for it.
 */
export class StoreOutage {
  private since?: number;
  private lost = false;
  private recoveries = 0;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly logger?: OutageLog,
    private readonly metrics?: Pick<Metrics, 'storeAvailable' | 'committed'>,
  ) {}

  /** An outage is in progress: creates fail, so health says down. */
  get active(): boolean {
    return this.since !== undefined;
  }

  /** The store was lost for good (`broken`): nothing ends this outage but a restart. */
  get permanent(): boolean {
    return this.lost;
  }

  /**
   * How many times the store has come back: an attempt notes it as it begins, so that its
   * failure, if the store came back meanwhile, is known for news of a store that has since
   * recovered, and starts no new outage.
   */
  get epoch(): number {
    return this.recoveries;
  }

  /** Calls `listener` each time an outage starts. */
  onStart(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * The store can never be trusted again in this process (its files were replaced under it):
   * the outage starts and never ends, whatever succeeds later.
   */
  broken(error: StoreUnavailableError): void {
    this.failed(error);
    this.lost = true;
  }

  /**
   * Reports `error` if it means the store is unavailable; hands it back either way. `epoch`:
   * when the attempt that failed began (`this.epoch` then); by default, now.
   */
  report(error: unknown, epoch = this.epoch): unknown {
    if (error instanceof StoreUnavailableError) this.failed(error, epoch);
    return error;
  }

  /** `work`, begun now, with a failure that means the store is unavailable reported on its way through. */
  async watch<T>(work: Promise<T>): Promise<T> {
    const epoch = this.epoch;
    try {
      return await work;
    } catch (error) {
      throw this.report(error, epoch);
    }
  }

  /** An attempt begun at `epoch` (by default, now) found the store unavailable. */
  failed(error: StoreUnavailableError, epoch = this.epoch): void {
    if (this.since !== undefined || epoch < this.recoveries) return;
    this.since = Date.now();
    this.metrics?.storeAvailable(false);
    const cause = error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message}` : undefined;
    this.logger?.error({ msg: `store outage started: ${error.message}`, cause });
    for (const listener of this.listeners) listener();
  }

  /** A batch of `size` creates is durably committed, in `seconds`. */
  committed(size: number, seconds: number): void {
    this.metrics?.committed(size, seconds);
    this.recovered();
  }

  /** The store took a write: the outage, if there is one (and the store is not lost), ends. */
  recovered(): void {
    if (this.since === undefined || this.lost) return;
    const durationMs = Date.now() - this.since;
    this.since = undefined;
    this.recoveries++;
    this.metrics?.storeAvailable(true);
    this.logger?.log({ msg: `store outage ended after ${durationMs} ms`, durationMs });
  }
}
