import { Injectable, type Logger, type OnApplicationShutdown } from '@nestjs/common';
import { StoreUnavailableError } from '../errors/api-error';
import { Metrics } from '../observability/metrics';

export type OutageLog = Pick<Logger, 'error' | 'log'>;

/** Logged once when it starts and once when it ends; only a write that goes through ends it. */
export class StoreOutage {
  /** Read on every commit: plain fields, written only here. Whether an outage is on; */
  active = false;
  /** and how many times the store has come back (an attempt notes it as it begins). */
  epoch = 0;
  private since = 0;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly metrics: Pick<Metrics, 'storeAvailable'>,
    private readonly logger?: OutageLog,
  ) {}

  onStart(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Reports `error` if it means the store is unavailable; hands it back either way. */
  report(error: unknown, epoch = this.epoch): unknown {
    if (error instanceof StoreUnavailableError) this.failed(error, epoch);
    return error;
  }

  failed(error: StoreUnavailableError, epoch = this.epoch): void {
    if (this.active || epoch < this.epoch) return;
    this.active = true;
    this.since = Date.now();
    this.metrics.storeAvailable(false);
    const cause = error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message}` : undefined;
    this.logger?.error({ msg: `store outage started: ${error.message}`, cause });
    for (const listener of this.listeners) listener();
  }

  recovered(): void {
    if (!this.active) return;
    const durationMs = Date.now() - this.since;
    this.active = false;
    this.epoch++;
    this.metrics.storeAvailable(true);
    this.logger?.log({ msg: `store outage ended after ${durationMs} ms`, durationMs });
  }
}

export abstract class StoreCheck {
  /** Everything a create needs short of writing one; cheap enough for every probe. */
  abstract ready(): Promise<void>;
  /** While an outage lasts, about once a second: that a write goes through again. */
  abstract takesWrites(): Promise<void>;
}

export const RECOVERY_CHECK_MS = 1_000;

/** An instance out of the balancer gets no creates, so its outage must end without one. */
@Injectable()
export class StoreRecovery implements OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly outage: StoreOutage,
    private readonly check: StoreCheck,
  ) {
    outage.onStart(() => this.lookAgainLater());
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private lookAgainLater(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = setTimeout(() => void this.look(), RECOVERY_CHECK_MS);
  }

  private async look(): Promise<void> {
    try {
      if (!this.outage.active) return;
      await this.check.takesWrites();
      this.outage.recovered();
    } catch {
      // still down: looked at again
    } finally {
      this.timer = undefined;
      if (this.outage.active) this.lookAgainLater();
    }
  }
}
