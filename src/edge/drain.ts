import type { ServerResponse } from 'node:http';
import { Injectable } from '@nestjs/common';
import { AnswerOrder, type Connection } from './answer-order';

/**
 * When a drain begins, how long an idle kept-alive connection stays open: a request that is
 * already on its way (in the kernel's buffers) is read and answered 503, never reset.
 */
export const DRAIN_IDLE_GRACE_MS = 250;

/**
 * How long an answer already written when the drain looks (every this often) may wait for its
 * client to read it: one that stops reading holds the drain no longer than twice this.
 */
export const DRAIN_DELIVERY_MS = 2_000;

/**
 * The drain (SIGTERM, see `gracefulShutdown`): a request that arrives on an open connection, or
 * on one accepted during the drain, is refused (503, `Connection: close`: see Admission); requests in flight
 * run to their end, and their answers say `Connection: close` too; a connection with nothing
 * under way is closed once it has stayed so for DRAIN_IDLE_GRACE_MS, so that a request already
 * on its way is answered, not reset.
 */
@Injectable()
export class Drain {
  /** Begun: read on every request, so a field rather than a getter. */
  draining = false;

  constructor(private readonly order: AnswerOrder) {}

  /** Makes `server.close()` close idle connections the drain's way (see SocketHandling). */
  closeIdleConnections(): void {
    for (const connection of this.order.connections()) this.closeWhenIdle(connection);
  }

  /**
   * Begins the drain; resolves once every request that was under way when it began has been
   * answered. Requests that arrive meanwhile are answered at once.
   */
  begin(): Promise<void> {
    if (this.draining) return Promise.resolve();
    this.draining = true;
    this.order.onIdle((connection) => this.closeWhenIdle(connection));
    const inFlight = new Set<ServerResponse>();
    for (const connection of this.order.connections()) {
      const response = connection.active;
      if (response !== undefined && !response.writableFinished) inFlight.add(response);
      // An answer still to be written tells its client that this connection ends with it.
      if (response?.headersSent === false) response.setHeader('Connection', 'close');
      this.closeWhenIdle(connection);
    }
    const answered = [...inFlight].map(
      (response) => new Promise((resolve) => response.once('close', () => resolve(inFlight.delete(response)))),
    );
    let written = new Set<ServerResponse>();
    const undelivered = setInterval(() => {
      for (const response of written) if (inFlight.has(response)) response.destroy();
      written = new Set([...inFlight].filter((response) => response.writableEnded));
    }, DRAIN_DELIVERY_MS).unref();
    return Promise.all(answered).then(() => clearInterval(undelivered));
  }

  /** Closes `connection` after DRAIN_IDLE_GRACE_MS unless a request is under way on it then. */
  private closeWhenIdle(connection: Connection): void {
    setTimeout(() => {
      if (this.order.isIdle(connection)) this.order.close(connection);
    }, DRAIN_IDLE_GRACE_MS).unref();
  }
}
