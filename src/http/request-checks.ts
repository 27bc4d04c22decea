import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ErrorBody, ErrorCode } from '../errors/error-codes';
import { writeError } from '../errors/error-response';

/** Headers a request may carry at most once (RFC 9110 §5.3): a proxy may read another copy. */
const SINGLE_HEADERS = ['host', 'authorization', 'content-type', 'content-length'] as const;
type SingleHeader = (typeof SINGLE_HEADERS)[number];

function malformed(message: string): ErrorBody {
  return { error: ErrorCode.BadRequest, message: `Malformed HTTP request: ${message}` };
}

/** Counts the headers that must not repeat, in one pass over the raw headers. */
function countSingleHeaders(request: IncomingMessage): Record<SingleHeader, number> {
  const counts = { host: 0, authorization: 0, 'content-type': 0, 'content-length': 0 };
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    // Only names of the right length are lowered: most headers are not among these.
    if (name.length === 4 || name.length === 12 || name.length === 13 || name.length === 14) {
      const lower = name.toLowerCase();
      if (Object.hasOwn(counts, lower)) counts[lower as SingleHeader]++;
    }
  }
  return counts;
}

/** Why the request's framing or protocol is refused, or undefined when it is sound. */
function framingRefusal(request: IncomingMessage): ErrorBody | undefined {
  // RFC 9112 §2.3: HTTP/1.0 and 1.1 are what this server speaks.
  if (request.httpVersionMajor !== 1 || request.httpVersionMinor > 1) {
    return malformed(`HTTP/${request.httpVersion} is not supported; use HTTP/1.1`);
  }
  const counts = countSingleHeaders(request);
  for (const name of SINGLE_HEADERS) {
    if (counts[name] > 1) return malformed(`more than one ${name} header`);
  }
  // RFC 9112 §3.2: an HTTP/1.1 request needs exactly one Host.
  if (counts.host === 0 && request.httpVersionMinor === 1) return malformed('no Host header');
  // RFC 9112 §6.1: a transfer coding the server does not understand is refused. Node would take
  // `gzip, chunked` as chunked and hand over a body still compressed.
  const coding = request.headers['transfer-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
    return malformed(`Transfer-Encoding "${coding.slice(0, 64)}" is not supported; only chunked is`);
  }
  return undefined;
}

/**
 * What Node's HTTP server would otherwise answer on its own, with a bare status line, or let
 * through: checked first thing, so the answer is in the contract (Error body, X-Request-Id, a
 * log line). Answers and returns true for
 * - the protocol version, repeated single headers, a missing Host, an unknown transfer coding: 400;
 * - an `Expect` other than `100-continue`: 417 (Node handles `100-continue` itself).
 * A request that asks to upgrade the connection (`Upgrade: websocket`) is answered as any other,
 * with `Connection: close`: Node's parser reads nothing more of a connection after such a
 * request, upgraded or not, so a request sent behind it would never be run nor answered.
 */
export function refusedAtTheDoor(request: IncomingMessage, response: ServerResponse): boolean {
  const refusal = framingRefusal(request);
  if (refusal !== undefined) {
    // Where this request ends is in doubt: nothing after it on the connection is read as a request.
    response.setHeader('Connection', 'close');
    writeError(request, response, refusal);
    return true;
  }
  const expect = request.headers.expect;
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    writeError(request, response, {
      error: ErrorCode.ExpectationFailed,
      message: 'Unsupported Expect header: only 100-continue is understood',
    });
    return true;
  }
  if (request.headers.upgrade !== undefined) response.setHeader('Connection', 'close');
  return false;
}
