import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo, ListenOptions, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type ErrorBody, ErrorCode } from '../errors/error-codes';
import { type Metrics, UNMATCHED_ROUTE } from '../observability/metrics';
import type { ErrorResponses } from './error-response';
import type { OpenRequests } from './open-requests';

/** What one client may take, held by Node's server and the gate; a test provides its own. */
export class ClientLimits {
  /** Nothing moving outlasts the header deadline's check, which answers a header block cut short. */
  readonly headersMs: number = 10_000;
  readonly requestMs: number = 20_000;
  readonly idleMs: number = 12_000;
  /** Requests on one connection: what a client pipelining without reading costs is bounded by it. */
  readonly requests: number = 1_000;
}

function refusalOf(code: string | undefined, { headersMs, requestMs, idleMs }: ClientLimits): ErrorBody {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return { error: ErrorCode.RequestHeaderFieldsTooLarge, message: 'Request headers are too large' };
  }
  if (code !== 'ERR_HTTP_REQUEST_TIMEOUT') return { error: ErrorCode.BadRequest, message: 'Malformed HTTP request' };
  const limits = `the headers must arrive within ${headersMs / 1000} s and the whole request within ${requestMs / 1000} s`;
  return { error: ErrorCode.BadRequest, message: `Request timed out: ${limits}, with no pause of ${idleMs / 1000} s` };
}

/**
 * Nest's "multiple servers" recipe, so Node's own options bound what a client costs. What Node
 * would answer with a bare status line or a close is answered in the contract, after every earlier
 * answer on its connection.
 */
export function createHttpServer(
  app: RequestListener,
  { requests, errors }: { requests: OpenRequests; errors: ErrorResponses },
  log: { logger: Logger; metrics: Metrics; maxInFlight: number },
  limits: ClientLimits,
): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersMs,
      requestTimeout: limits.requestMs,
      connectionsCheckingInterval: limits.headersMs / 10,
      // The idle deadline covers a kept-alive connection too, and outlasts the header deadline.
      keepAliveTimeout: 0,
      requireHostHeader: false,
      shouldUpgradeCallback: () => false,
    },
    app,
  );
  server.setTimeout(limits.idleMs);
  server.on('checkContinue', app);
  server.on('checkExpectation', app);
  const limit = descriptorLimit();
  if (limit !== undefined) {
    // Clients take what the store, the log and the listeners leave: a PostgreSQL pool can always connect.
    server.maxConnections = Math.max(1, limit - RESERVED_DESCRIPTORS);
    const [needed, context] = [log.maxInFlight + RESERVED_DESCRIPTORS, 'Connections'];
    const advice = `raise it (LimitNOFILE=, ulimit -n) or keep the proxy's maxconn below ${server.maxConnections}`;
    const short = `the descriptor limit is ${limit}, below the ${needed} that MAX_IN_FLIGHT=${log.maxInFlight} needs`;
    if (limit < needed) log.logger.warn({ context, limit, needed }, `${short}: ${advice}`);
    const refused = `refused a connection: ${server.maxConnections} are open, all that the descriptor limit leaves`;
    server.once('drop', () => log.logger.warn({ context, limit }, `${refused}; ${advice}`));
  }

  const refuse = (socket: Duplex, body: ErrorBody, detail: object = {}, headers = {}): void => {
    requests.refuseAfterAnswers(socket, () => {
      if (!socket.writable) return void socket.destroy();
      const requestId = randomUUID();
      log.logger.info({ requestId, res: { status: 400 }, error: body.error, ...detail }, 'request refused unread');
      log.metrics.answered({ method: undefined, route: UNMATCHED_ROUTE, status: 400, error: body.error });
      errors.writeRaw(socket, body, requestId, headers);
    });
  };
  /** The answer to the request on `socket` still arriving (its body incomplete), if one is. */
  const readingResponse = (socket: Duplex) => [...requests.openOn(socket)].find((response) => !response.req.complete);
  /** The request still arriving on `socket` gets `body` as its answer, in its turn; else the bytes that never became one. */
  const answerBroken = (socket: Duplex, body: ErrorBody, detail: object): void => {
    const reading = readingResponse(socket);
    if (reading === undefined) return refuse(socket, body, detail);
    if (reading.headersSent) return requests.refuseAfterAnswers(socket, () => errors.closeLingering(socket));
    errors.write(reading.req, reading, body);
  };
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'HPE_CLOSED_CONNECTION' || requests.isClosing(socket)) return;
    if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    answerBroken(socket, refusalOf(error.code, limits), { parserError: error.code ?? 'unknown' });
  });
  const refuseMethod = (request: IncomingMessage, socket: Duplex): void => {
    const body = { error: ErrorCode.MethodNotAllowed, message: `${request.method} is not supported; use POST /plants` };
    refuse(socket, body, { req: { method: request.method } }, { Allow: 'POST' });
  };
  server.on('connect', refuseMethod);
  server.on('upgrade', refuseMethod); // Node without shouldUpgradeCallback (before 22.21)
  // A whole request keeps its connection, the deadline (which fires once) set again; one still arriving is answered.
  server.on('timeout', (socket: Socket) => {
    const awaitingAnswer = [...requests.openOn(socket)].some((open) => open.req.complete && !open.headersSent);
    if (awaitingAnswer) return void socket.setTimeout(limits.idleMs);
    if (readingResponse(socket) === undefined || requests.isClosing(socket)) return void socket.destroy();
    socket.setTimeout(limits.idleMs); // the answer must move too, or the connection goes
    answerBroken(socket, refusalOf('ERR_HTTP_REQUEST_TIMEOUT', limits), { timedOut: true });
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
  const unresolved = `${HOST} "${at.host}" cannot be resolved (${error.code}); use an address such as 0.0.0.0, 127.0.0.1 or ::`;
  const said: Record<string, string> = {
    EADDRINUSE: `${PORT} ${at.port} is already in use on ${at.host} (EADDRINUSE); stop the other server or choose another ${PORT}`,
    EACCES: `${PORT} ${at.port} needs privileges this process does not have (EACCES); choose a ${PORT} above 1023`,
    ENOTFOUND: unresolved,
    EAI_AGAIN: unresolved,
  };
  return said[error.code ?? ''] ?? `cannot listen on ${HOST} ${at.host}, ${PORT} ${at.port}: ${error.message}`;
}

/** This process's descriptor limit, from /proc (Node has no getrlimit); undefined where there is none. */
function descriptorLimit(): number | undefined {
  try {
    return Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]) || undefined;
  } catch {
    return undefined;
  }
}

/** Descriptors for all but the clients' connections: the listeners, the store, the log. */
const RESERVED_DESCRIPTORS = 64;
