import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { Inject, Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Logger } from 'pino';
import { CONFIG, type ConfigSlice } from '../config/configuration';
import { ErrorCode } from '../errors/error-codes';
import { writeRawError } from '../errors/error-response';
import { ROOT_LOGGER } from '../observability/logger';
import { Metrics } from '../observability/metrics';
import { AnswerOrder } from './answer-order';
import { listen as listenOn } from '../net/listen';

/**
 * How many sockets listen on the public port. Node accepts one waiting connection each time a
 * listening socket is reported ready, once per pass of its event loop over the ready sockets, so
 * a process busy with thousands of requests accepts new connections only as often as that pass
 * comes round: a storm of reconnecting clients overflows the kernel's queue and waits for SYN
 * retries (1 s, 3 s…). With several sockets on the port (SO_REUSEPORT: the kernel spreads new
 * connections over them by a hash), each pass accepts from each, and each has its own queue. The
 * last connection of a storm waits as many passes as the busiest socket holds connections, and a
 * hash fills some sockets well past the mean: so there are more sockets than a storm's share per
 * socket would suggest (docs/decisions.md, Limits; test/process/connection-storm.spec.ts).
 */
export const PUBLIC_LISTENERS = 4096;

/**
 * How many sockets listen on the public port with `limit` descriptors to spend: PUBLIC_LISTENERS,
 * or an eighth of a smaller limit, so that most of it is left for connections.
 */
export function listenersWithin(limit: number | undefined): number {
  if (limit === undefined) return PUBLIC_LISTENERS;
  return Math.max(1, Math.min(PUBLIC_LISTENERS, Math.floor(limit / 8)));
}

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
@Injectable()
export class ConnectionBudget {
  private refusing = false;
  private refused = 0;

  /** This process's descriptor limit; undefined where none is known. */
  readonly limit = descriptorLimit();
  /** How many sockets listen on the public port. */
  readonly listeners = listenersWithin(this.limit);
  /** How many connections may be open at once; undefined for no limit. */
  readonly connections =
    this.limit === undefined
      ? undefined
      : Math.max(1, this.limit - this.listeners - RESERVED_DESCRIPTORS - REFUSAL_HEADROOM);

  constructor(
    private readonly order: AnswerOrder,
    private readonly metrics: Metrics,
    @Inject(ROOT_LOGGER) private readonly logger: Logger,
    @Inject(CONFIG.edge) private readonly edge: ConfigSlice<'edge'>,
  ) {}

  /**
   * Says in one line, at start, what to raise when the budget cannot hold MAX_IN_FLIGHT
   * connections. A limit that only costs listening sockets is no fault: the port still takes
   * every connection, and a storm is accepted in fewer passes the more sockets there are.
   */
  private warnIfShort(): void {
    const { maxInFlight } = this.edge;
    if (this.connections === undefined || this.connections >= maxInFlight) return;
    const needed = descriptorsNeeded(maxInFlight);
    this.logger.warn(
      { context: 'Connections', limit: this.limit, needed, listeners: this.listeners, budget: this.connections },
      `the descriptor limit is ${this.limit}, below the ${needed} that MAX_IN_FLIGHT=${maxInFlight} needs: raise it (ulimit -n, LimitNOFILE=, a container's --ulimit nofile=) or lower MAX_IN_FLIGHT; until then the port has ${this.listeners} listening sockets and connections past ${this.connections} are answered 503`,
    );
  }

  /** True while connections past the budget are being refused. */
  get exhausted(): boolean {
    return this.refusing;
  }

  /**
   * Watches `server`'s connections (call it once, after `order.track`, which counts them), and
   * says at once if the limit is short.
   */
  watch(server: HttpServer): void {
    this.warnIfShort();
    const max = this.connections;
    if (max === undefined) return;
    const order = this.order;
    server.on('connection', (socket: Socket) => {
      if (order.size <= max) return;
      if (!this.refusing) this.begin(order, this.logger, max);
      this.refused++;
      this.metrics.connectionRefused();
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

/**
 * The public port: the HTTP server's own listening socket, and more on the same port, as many as
 * ConnectionBudget.listeners says in all (`reusePort`; `listenersWithin`), each handing what it accepts to the HTTP server (its documented
 * 'connection' event), so that every connection is the server's whichever socket took it.
 *
 * Another process may bind a port that is listened on with SO_REUSEPORT (if it runs as the same
 * user and asks for it too), so the port is first bound alone for a moment (`reservePort`): a
 * port already in use fails the start (EADDRINUSE) as with one socket. Under WORKERS the primary
 * checks and holds it (`holdPort`), and every worker listens on it with sockets of its own, as
 * one process does: the kernel spreads a storm over all of them. (Through Node's cluster the
 * primary would accept every connection on one socket and pass each to a worker, which falls
 * seconds behind a storm: docs/performance.md.)
 */
@Injectable()
export class PublicPort {
  private readonly others: Server[] = [];

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly budget: ConnectionBudget,
  ) {}

  private get server(): HttpServer {
    return this.adapterHost.httpAdapter.getHttpServer() as HttpServer;
  }

  /** Every socket listening on the port: the HTTP server's first. */
  get listeners(): readonly Server[] {
    return [this.server, ...this.others];
  }

  /**
   * Listens on `port` (0: a free one), checked free first unless `reserved`: a cluster worker's
   * port, which the primary checked, chose and holds (`holdPort`).
   */
  async listen(port: number, host: string, reserved = false): Promise<AddressInfo> {
    const free = reserved ? port : await reservePort(port, host);
    // `exclusive`: in a cluster worker, these sockets are the worker's own, not the primary's.
    const address = await listenOn(this.server, { port: free, host, reusePort: true, exclusive: true });
    for (let i = 1; i < this.budget.listeners; i++) {
      // As http.Server makes its own socket: half-open allowed (HTTP decides), no Nagle delay.
      const server = this.server;
      const other = createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
        server.emit('connection', socket);
      });
      await listenOn(other, { port: address.port, host, reusePort: true, exclusive: true });
      this.others.push(other);
    }
    return address;
  }
}

/**
 * Binds `port` alone for a moment and lets it go: rejects (EADDRINUSE…) if anything holds it,
 * else resolves with it (the free port the kernel chose, for 0).
 */
async function reservePort(port: number, host: string): Promise<number> {
  const alone = createServer();
  const { port: free } = await listenOn(alone, { port, host, exclusive: true });
  await new Promise((resolve) => alone.close(resolve));
  return free;
}

export interface HeldPort {
  port: number;
  /** Lets the port go (once; again does nothing). */
  release: () => void;
}

/**
 * A cluster primary's hold on the public port until its first worker listens: checked free
 * (`reservePort`), then kept by a socket that shares it (`reusePort`), so that nothing else
 * takes it while the workers start (a second or two; for PORT=0, the kernel would hand the
 * freed port to the next process, or to this one's metrics listener, that asks for any port).
 * What connects before a worker listens is closed: nothing here serves it.
 */
export async function holdPort(port: number, host: string): Promise<HeldPort> {
  const free = await reservePort(port, host);
  const holder = createServer((socket) => socket.destroy());
  await listenOn(holder, { port: free, host, reusePort: true, exclusive: true });
  let held = true;
  const release = (): void => {
    if (held) holder.close();
    held = false;
  };
  return { port: free, release };
}

const WORKER_SERVING = 'plant-store:serving';

/**
 * What a cluster worker tells the primary once it listens (in place of Node's cluster
 * 'listening'); the port is the one the primary holds for it.
 */
export interface WorkerServing {
  type: typeof WORKER_SERVING;
}

export function workerServing(): WorkerServing {
  return { type: WORKER_SERVING };
}

export function isWorkerServing(message: unknown): message is WorkerServing {
  return (message as Partial<WorkerServing> | null)?.type === WORKER_SERVING;
}
