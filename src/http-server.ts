import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type ErrorBody, ErrorCode } from './common/error-codes';

/** A client that has not sent its whole header block in this time is cut off. */
export const HEADERS_TIMEOUT_MS = 10_000;

function rawErrorResponse(body: ErrorBody, requestId: string): string {
  const json = JSON.stringify(body);
  return (
    'HTTP/1.1 400 Bad Request\r\n' +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(json)}\r\n` +
    `X-Request-Id: ${requestId}\r\n` +
    'Connection: close\r\n\r\n' +
    json
  );
}

/**
 * Node's HTTP parser answers what it refuses (a broken request line, oversized headers) with
 * a bare 400 or 431 before any middleware runs. The contract wants the Error body there too.
 */
export function hardenHttpServer(server: Server, logger: Logger): void {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = 30_000;
  // The timeouts above are checked on this period; Node's default (30 s) would let a
  // dribbling client hold its socket for up to 40 s.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = 1_000;
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || error.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      socket.destroy(); // too slow to deserve an answer
      return;
    }
    const body: ErrorBody =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? { error: ErrorCode.RequestHeaderFieldsTooLarge, message: 'Request headers are too large' }
        : { error: ErrorCode.BadRequest, message: 'Malformed HTTP request' };
    // The request never got as far as a method or path; its one log line says why instead.
    const requestId = randomUUID();
    logger.info(
      { requestId, res: { status: 400 }, error: body.error, parserError: error.code },
      `refused by the HTTP parser: ${error.code ?? 'unknown'}`,
    );
    socket.end(rawErrorResponse(body, requestId));
  });
}
