import type { Metrics } from '../metrics/metrics';
import { StoreUnavailableError } from '../errors/store-unavailable.error';

/** Where an outage is told: the application's log (Nest's `Logger`, context "Store"). */
export interface OutageLog {
  error(message: object): void;
  log(message: object): void;
}

/**
 * Logs a store outage twice: when it starts (the first failure, with its cause) and when it
 * ends (with its length). Every request that meets the outage answers 503, but none writes a
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

  /** Reports `error` if it means the store is unavailable; hands it back either way. */
  report(error: unknown): unknown {
    if (error instanceof StoreUnavailableError) this.failed(error);
    return error;
  }

  /** `work`, with a failure that means the store is unavailable reported on its way through. */
  async watch<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      throw this.report(error);
    }
  }

  failed(error: StoreUnavailableError): void {
    if (this.since !== undefined) return;
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
    this.metrics?.storeAvailable(true);
    this.logger?.log({ msg: `store outage ended after ${durationMs} ms`, durationMs });
  }
}
