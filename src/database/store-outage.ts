import { Injectable, Logger } from '@nestjs/common';
import { StoreUnavailableError } from './store-unavailable.error';

/**
 * Logs a store outage twice: when it starts (the first failure, with its cause) and when it
 * ends (the first success after it, with its length). Every request that meets the outage
 * answers 503, but none writes a log line of its own beyond its request line: an outage of a
 * minute under load would otherwise write a stack trace per request. Any store operation may
 * report a failure; only a durable create reports success, because a read that works (a token
 * lookup while another process holds the write lock) does not mean the outage is over.
 */
@Injectable()
export class StoreOutage {
  private readonly logger = new Logger('Store');
  private since?: number;

  get active(): boolean {
    return this.since !== undefined;
  }

  failed(error: StoreUnavailableError): void {
    if (this.since !== undefined) return;
    this.since = Date.now();
    const cause = error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message}` : undefined;
    this.logger.error({ msg: `store outage started: ${error.message}`, cause });
  }

  succeeded(): void {
    if (this.since === undefined) return;
    const durationMs = Date.now() - this.since;
    this.since = undefined;
    this.logger.log({ msg: `store outage ended after ${durationMs} ms`, durationMs });
  }
}
