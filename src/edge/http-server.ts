import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type ErrorBody, ErrorCode } from '../errors/error-codes';
import { writeError, writeRawError, writeUnavailable } from '../errors/error-response';
import { UNMATCHED_ROUTE } from '../observability/metrics';
import type { RequestLog } from '../observability/logger';
import type { AnswerOrder } from './answer-order';

/** A client that has not sent its whole header block in this time is cut off. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** A client that has not sent its whole request (headers and body) in this time is cut off. */
export const REQUEST_TIMEOUT_MS = 20_000;
/** A connection on which nothing moves (no byte read or written) for this long is closed. */
export const IDLE_SOCKET_TIMEOUT_MS = 10_000;
/** Every response is delivered within this time of its request's arrival, or the connection is cut. */
export const RESPONSE_DEADLINE_MS = 30_000;
/** How often responses are checked against their deadline. */
export const DEADLINE_CHECK_MS = 1_000;

function parserRefusal(error: NodeJS.ErrnoException): ErrorBody {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { error: ErrorCode.RequestHeaderFieldsTooLarge, message: 'Request headers are too large' };
    case 'HPE_INVALID_EOF_STATE':
      return {
        error: ErrorCode.BadRequest,
        message: 'Request incomplete: the client ended its side of the connection before the whole body arrived',
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        error: ErrorCode.BadRequest,
        message: `Request timed out: the headers must arrive within ${HEADERS_TIMEOUT_MS / 1000} s and the whole request within ${REQUEST_TIMEOUT_MS / 1000} s`,
      };
    default:
      return { error: ErrorCode.BadRequest, message: 'Malformed HTTP request' };
  }
}

/** The client's address, for the line of bytes refused before they became a request. */
function peerAddress(socket: Duplex): string | undefined {
  return socket instanceof Socket ? socket.remoteAddress : undefined;
}

/**
 * Bounds what a client can cost before and around the application, and makes Node's own answers
 * the contract's:
 * - deadlines for the headers, the whole request, an idle connection, and the response (a
 *   client that stops reading is disconnected);
 * - what Node's parser refuses (a broken request line, oversized headers, a timed-out request)
 *   and a `CONNECT` are answered with the Error body, an X-Request-Id and a log line, instead of
 *   a bare status line or silence;
 * - a request without `Host` reaches the application (which answers it in the contract) instead
 *   of Node's bare 400, and an `Expect` Node does not know reaches it instead of a bare 417.
 */
export function hardenHttpServer(server: Server, requestLog: RequestLog, order: AnswerOrder): void {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.setTimeout(IDLE_SOCKET_TIMEOUT_MS);
  // A connection on which nothing moved for IDLE_SOCKET_TIMEOUT_MS: a request whose body stopped
  // arriving is answered (400, in the contract, logged) and closed; a request that arrived whole
  // and waits for its answer (the store's waits are bounded, and answered 503) keeps its
  // connection; anything else, such as a client that stopped reading its answer, is cut. (Left to
  // itself, Node keeps the socket open whenever something listens for the response's own
  // 'timeout', as a static file stream may.) AnswerOrder re-arms it as each request's turn begins.
  // And whatever moves, the answer is delivered within the deadline or the connection is cut.
  enforceResponseDeadline(server, order, RESPONSE_DEADLINE_MS);
  server.on('timeout', (socket: Socket) => {
    const response = order.activeOn(socket);
    if (response !== undefined && !response.headersSent && response.req.complete) {
      socket.setTimeout(IDLE_SOCKET_TIMEOUT_MS); // the client is waiting for us, not we for it
      return;
    }
    if (response === undefined || response.headersSent) {
      socket.destroy();
      return;
    }
    // The answer closes the connection (its body is unread), with a lingering close.
    writeError(response.req, response, {
      error: ErrorCode.BadRequest,
      message: `Request timed out: nothing arrived for ${IDLE_SOCKET_TIMEOUT_MS / 1000} s before the body was complete`,
    });
  });
  // How often the timeouts above are checked, and who answers a request without Host, are
  // options of a server Nest has already made: set by SocketHandling.adopt.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    server.emit('request', request, response);
  });

  // Both refusals wait for every earlier answer on their connection (see AnswerOrder).
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    order.refuse(socket, () => {
      const requestId = randomUUID();
      const body: ErrorBody = {
        error: ErrorCode.MethodNotAllowed,
        message: 'CONNECT is not supported; use POST /plants',
      };
      requestLog.answered({
        requestId,
        method: request.method,
        target: request.url,
        route: UNMATCHED_ROUTE,
        status: 400,
        error: body.error,
        client: peerAddress(socket),
      });
      writeRawError(socket, body, requestId, { Allow: 'POST' });
    });
  });

  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || error.code === 'ECONNRESET') {
      socket.destroy(); // gone: nobody to answer
      return;
    }
    // A refusal that concerns the body of the request being run (still arriving past
    // REQUEST_TIMEOUT_MS, a byte at a time, so the idle timeout never fires; or cut short by
    // the client's FIN, which the half-open socket would otherwise leave waiting for the idle
    // timeout, holding a drain with it) is that request's answer, not a turn queued behind it.
    const active = order.activeOn(socket as Socket);
    if (active !== undefined && !active.headersSent && !active.req.complete) {
      writeError(active.req, active, parserRefusal(error));
      return;
    }
    order.refuse(socket, () => {
      if (!socket.writable) return;
      const body = parserRefusal(error);
      // The request never got as far as a method or path; its one log line says why instead.
      const requestId = randomUUID();
      requestLog.answered({
        requestId,
        method: undefined,
        target: undefined,
        route: UNMATCHED_ROUTE,
        client: peerAddress(socket),
        status: 400,
        error: body.error,
        parserError: error.code ?? 'unknown',
      });
      writeRawError(socket, body, requestId);
    });
  });
}

/**
 * Every response is delivered within `deadlineMs` of its request's start: one whose answer has
 * begun but not been read (a client reading a byte a second keeps the idle timeout from firing)
 * has its connection cut; a request that arrived whole but has no answer yet (every store wait is
 * bounded, so nothing should last this long) is answered 503 and its connection closed. One
 * check of every open connection each DEADLINE_CHECK_MS, against the deadline less that period,
 * rather than a timer and a listener for every request.
 */
export function enforceResponseDeadline(server: Server, order: AnswerOrder, deadlineMs: number): void {
  const check = setInterval(() => {
    const late = Date.now() - (deadlineMs - DEADLINE_CHECK_MS);
    for (const connection of order.connections()) {
      const response = connection.active;
      if (response === undefined || connection.since > late) continue;
      if (response.headersSent || !response.req.complete) {
        response.destroy();
      } else {
        writeUnavailable(response.req, response, 'The server could not answer in time; try again');
      }
    }
  }, DEADLINE_CHECK_MS).unref();
  server.once('close', () => clearInterval(check));
}
