import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type ErrorBody, ErrorCode } from './error-codes';

/** The contract code each failed response was answered with, for its request log line. */
const codes = new WeakMap<ServerResponse, ErrorCode>();
export const failureCodes: Pick<WeakMap<ServerResponse, ErrorCode>, 'get'> = codes;

export type ErrorHeaders = Readonly<Record<string, string>>;

/**
 * Whether the request still has body bytes we have not read. Answering such a request and then
 * keeping the connection would make Node drain the rest of the body (up to whatever the client
 * declared) before the next request: so the connection is closed instead.
 */
function hasUnreadBody(request: IncomingMessage): boolean {
  return !request.complete;
}

/**
 * The one writer of the contract's failure answer: HTTP 400, `application/json`, `{error,
 * message}`. Every path that refuses a request ends here: the exception filter, the drain
 * check, the host and expectation checks, the rate limit, and Node's own parser refusals
 * (`writeRawError`, below, for a socket that never became a request).
 */
export function writeError(
  request: IncomingMessage,
  response: ServerResponse,
  body: ErrorBody,
  headers: ErrorHeaders = {},
): void {
  codes.set(response, body.error);
  if (response.headersSent) {
    // Too late for an answer in the contract: cut the connection rather than send a wrong one.
    request.socket.destroy();
    return;
  }
  const json = JSON.stringify(body);
  for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
  if (hasUnreadBody(request)) response.setHeader('Connection', 'close');
  response.statusCode = 400;
  response.setHeader('Content-Type', 'application/json; charset=utf-8');
  response.setHeader('Content-Length', Buffer.byteLength(json));
  response.end(json);
}

/**
 * The server's own refusals for want of time, capacity or a future (a response past its deadline,
 * past MAX_IN_FLIGHT, while draining): 503 with `Retry-After: 1`, and the connection closed after it.
 */
export function writeUnavailable(request: IncomingMessage, response: ServerResponse, message: string): void {
  response.setHeader('Connection', 'close');
  writeError(request, response, { error: ErrorCode.ServiceUnavailable, message }, { 'Retry-After': '1' });
}

/**
 * The same answer written straight to a socket, for what never became a request: Node's HTTP
 * parser refusing bytes (a broken request line, oversized headers, a timeout) or a `CONNECT`.
 * It says `Connection: close`; the caller closes the connection after it (see AnswerOrder).
 */
export function writeRawError(socket: Duplex, body: ErrorBody, requestId: string, headers: ErrorHeaders = {}): void {
  const json = JSON.stringify(body);
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(
    'HTTP/1.1 400 Bad Request\r\n' +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(json)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      extra +
      'Connection: close\r\n\r\n' +
      json,
  );
}
