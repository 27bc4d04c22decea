import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ErrorCode } from '../errors/error-codes';
import { writeRawError } from '../errors/error-response';
import type { Metrics } from '../metrics/metrics';
import { listenersWithin, PUBLIC_LISTENERS } from '../net/public-port';
import type { AnswerOrder } from './answer-order';

/**
 * Descriptors kept for everything but the public port's connections: the listeners are counted
 * apart; this covers the store's files or pool, the log, the metrics listener and Node's own.
 */
export const RESERVED_DESCRIPTORS = 64;

/**
 * Descriptors kept for the connections answered 503 past the budget: each holds its own until its
 * client closes (at most the lingering close's bound).
 */
export const REFUSAL_HEADROOM = 64;

/** How often, while refusing, the budget looks whether connections have fallen a tenth under it. */
const RECOVERY_CHECK_MS = 500;

/**
 * This process's limit on open descriptors (the soft RLIMIT_NOFILE, which Node raises to the
 * hard one at start), from /proc: Node offers no getrlimit. Undefined where there is no /proc.
 */
export function descriptorLimit(limits = '/proc/self/limits'): number | undefined {
  try {
    const soft = /^Max open files\s+(\S+)/m.exec(readFileSync(limits, 'utf8'))?.[1];
    return soft === undefined || soft === 'unlimited' ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/** What the process needs to hold `maxInFlight` requests, each on its own connection. */
export function descriptorsNeeded(maxInFlight: number): number {
  return PUBLIC_LISTENERS + RESERVED_DESCRIPTORS + REFUSAL_HEADROOM + maxInFlight;
}

/**
 * Keeps the public port's connections within the descriptors the process may open. At the limit
 * (EMFILE) libuv accepts each waiting connection and closes it at once, which its client sees as
 * a connection closed with no answer, and Node is not told; so the service stops short of it:
 * past the budget a new connection is answered 503 with `Retry-After` at once and closed
 * gracefully, the process is unready, and the first refusal is logged and each one counted, until
 * the connections fall back under the budget (logged too).
 */
export class ConnectionBudget {
  private refusing = false;
  private refused = 0;

  /** How many sockets listen on the public port. */
  readonly listeners: number;
  /** How many connections may be open at once; undefined for no limit. */
  readonly connections: number | undefined;

  /** The budget of a process that may open `limit` descriptors (undefined: no known limit). */
  constructor(readonly limit: number | undefined) {
    this.listeners = listenersWithin(limit);
    this.connections =
      limit === undefined ? undefined : Math.max(1, limit - this.listeners - RESERVED_DESCRIPTORS - REFUSAL_HEADROOM);
  }

  /** True while connections past the budget are being refused. */
  get exhausted(): boolean {
    return this.refusing;
  }

  /** Watches `server`'s connections (call it after `order.track`, which counts them). */
  watch(server: Server, order: AnswerOrder, logger: Logger, metrics: Metrics): void {
    const max = this.connections;
    if (max === undefined) return;
    server.on('connection', (socket: Socket) => {
      const open = order.size;
      if (open <= max) return;
      if (!this.refusing) this.begin(order, logger, max);
      this.refused++;
      metrics.connectionRefused();
      order.refuse(socket, () =>
        writeRawError(
          socket,
          { error: ErrorCode.ServiceUnavailable, message: 'The server is at its connection limit; try again shortly' },
          randomUUID(),
          { 'Retry-After': '1' },
        ),
      );
    });
  }

  private begin(order: AnswerOrder, logger: Logger, max: number): void {
    this.refusing = true;
    this.refused = 0;
    logger.error(
      { context: 'Connections', budget: max },
      `${max} connections open, as many as the descriptor limit allows: new connections are answered 503 and the process is unready; raise the limit (ulimit -n, LimitNOFILE) or add instances`,
    );
    const recovery = setInterval(() => {
      if (order.size > max - Math.ceil(max / 10)) return;
      clearInterval(recovery);
      this.refusing = false;
      logger.info(
        { context: 'Connections', refused: this.refused },
        `back under the connection budget; ${this.refused} connections were refused`,
      );
    }, RECOVERY_CHECK_MS).unref();
  }
}
