import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo, ListenOptions, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type ErrorBody, ErrorCode } from '../errors/error-codes';
import { closingSockets, writeRawError } from '../errors/error-response';
import { type Metrics, UNMATCHED_ROUTE } from '../observability/metrics';
import type { RequestGate } from './request-gate';

/** What a client may take: the header block, the whole request, a connection on which nothing moves. */
export const DEADLINES = { headersMs: 10_000, requestMs: 20_000, idleMs: 10_000 };
export type Deadlines = typeof DEADLINES;

/** A connection serves this many requests: what a client pipelining without reading costs is bounded by it. */
export const MAX_REQUESTS_PER_CONNECTION = 1_000;

function parserRefusal(error: NodeJS.ErrnoException, deadlines: Deadlines): ErrorBody {
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return { error: ErrorCode.RequestHeaderFieldsTooLarge, message: 'Request headers are too large' };
  }
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      error: ErrorCode.BadRequest,
      message: `Request timed out: the headers must arrive within ${deadlines.headersMs / 1000} s and the whole request within ${deadlines.requestMs / 1000} s`,
    };
  }
  return { error: ErrorCode.BadRequest, message: 'Malformed HTTP request' };
}

/**
 * Nest's "multiple servers" recipe, so Node's own options bound what a client costs. What Node
 * would answer with a bare status line or a close is answered in the contract, after every earlier
 * answer on its connection.
 */
export function createHttpServer(
  app: RequestListener,
  gate: RequestGate,
  log: { logger: Logger; metrics: Metrics },
  deadlines: Deadlines = DEADLINES,
): Server {
  const server = createServer(
    {
      headersTimeout: deadlines.headersMs,
      requestTimeout: deadlines.requestMs,
      connectionsCheckingInterval: Math.min(1_000, deadlines.headersMs),
      requireHostHeader: false,
      shouldUpgradeCallback: () => false,
    },
    app,
  );
  server.setTimeout(deadlines.idleMs);
  server.maxRequestsPerSocket = MAX_REQUESTS_PER_CONNECTION;
  server.on('checkContinue', app);
  server.on('checkExpectation', app);

  const refuse = (socket: Duplex, body: ErrorBody, detail: object = {}, headers = {}): void => {
    gate.refuseAfterAnswers(socket, () => {
      if (!socket.writable) return void socket.destroy();
      const requestId = randomUUID();
      log.logger.info({ requestId, res: { status: 400 }, error: body.error, ...detail }, 'request refused unread');
      log.metrics.answered({ method: undefined, route: UNMATCHED_ROUTE, status: 400, error: body.error });
      writeRawError(socket, body, requestId, headers);
    });
  };
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'HPE_CLOSED_CONNECTION' || closingSockets.has(socket)) return;
    // A body cut short (by its client, or the request deadline) cannot be answered: disconnected.
    if (error.code === 'ECONNRESET' || !socket.writable || gate.reading(socket)) return void socket.destroy();
    refuse(socket, parserRefusal(error, deadlines), { parserError: error.code ?? 'unknown' });
  });
  const refuseMethod = (request: IncomingMessage, socket: Duplex): void => {
    const body = { error: ErrorCode.MethodNotAllowed, message: `${request.method} is not supported; use POST /plants` };
    refuse(socket, body, { req: { method: request.method } }, { Allow: 'POST' });
  };
  server.on('connect', refuseMethod);
  server.on('upgrade', refuseMethod); // Node without shouldUpgradeCallback (before 22.21)
  // A request that arrived whole keeps its connection until answered (store waits are bounded); a deadline fires once.
  server.on('timeout', (socket: Socket) => {
    if (gate.awaitingAnswer(socket)) socket.setTimeout(deadlines.idleMs);
    else socket.destroy();
  });
  return server;
}

export async function listen(server: Server, options: ListenOptions): Promise<AddressInfo> {
  server.listen(options);
  await once(server, 'listening');
  return server.address() as AddressInfo;
}

/** A listen failure in one line naming PORT and HOST (or METRICS_…). */
export function listenFailure(error: NodeJS.ErrnoException, at: { port: number; host: string }, prefix = ''): string {
  const [PORT, HOST] = [`${prefix}PORT`, `${prefix}HOST`];
  switch (error.code) {
    case 'EADDRINUSE':
      return `${PORT} ${at.port} is already in use on ${at.host} (EADDRINUSE); stop the other server or choose another ${PORT}`;
    case 'EACCES':
      return `${PORT} ${at.port} needs privileges this process does not have (EACCES); choose a ${PORT} above 1023`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${HOST} "${at.host}" cannot be resolved (${error.code}); use an address such as 0.0.0.0, 127.0.0.1 or ::`;
    case 'EADDRNOTAVAIL':
      return `${HOST} ${at.host} is not an address of this machine (EADDRNOTAVAIL)`;
    default:
      return `cannot listen on ${HOST} ${at.host}, ${PORT} ${at.port}: ${error.message}`;
  }
}

/** This process's descriptor limit, from /proc (Node has no getrlimit); undefined where there is none. */
export function descriptorLimit(limits = '/proc/self/limits'): number | undefined {
  try {
    const soft = /^Max open files\s+(\d+)/m.exec(readFileSync(limits, 'utf8'))?.[1];
    return soft === undefined ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/** Descriptors for all but the clients' connections: the listeners, the store, the log. */
export const RESERVED_DESCRIPTORS = 64;
