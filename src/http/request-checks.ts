import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode } from '../errors/error-codes';
import { writeError } from '../errors/error-response';

function hostHeaderCount(request: IncomingMessage): number {
  let count = 0;
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    if (request.rawHeaders[i].length === 4 && request.rawHeaders[i].toLowerCase() === 'host') count++;
  }
  return count;
}

/**
 * What Node's HTTP server would otherwise answer on its own, with a bare status line: checked
 * here, first thing, so the answer is in the contract (Error body, X-Request-Id, a log line).
 * - RFC 9112 §3.2: an HTTP/1.1 request needs exactly one `Host`; none or several is a 400.
 * - An `Expect` other than `100-continue` is a 417 (Node handles `100-continue` itself).
 */
export function httpRequestChecks(request: IncomingMessage, response: ServerResponse, next: () => void): void {
  const hosts = hostHeaderCount(request);
  if (hosts > 1 || (hosts === 0 && request.httpVersion === '1.1')) {
    writeError(request, response, {
      error: ErrorCode.BadRequest,
      message:
        hosts > 1 ? 'Malformed HTTP request: more than one Host header' : 'Malformed HTTP request: no Host header',
    });
    return;
  }
  const expect = request.headers.expect;
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    writeError(request, response, {
      error: ErrorCode.ExpectationFailed,
      message: 'Unsupported Expect header: only 100-continue is understood',
    });
    return;
  }
  next();
}
