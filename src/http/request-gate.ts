import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { type ErrorBody, ErrorCode } from '../errors/error-codes';
import { startRequestSpan, withSpan } from '../observability/tracing';
import { ErrorResponses } from './error-response';
import { ClientLimits } from './http-server';
import { isDocs, OpenRequests } from './open-requests';

/** The health probes' paths: never shed, answered while draining. */
export const PROBE_PATHS = { health: '/health', live: '/health/live', ready: '/health/ready' } as const;
const PROBES: readonly string[] = Object.values(PROBE_PATHS);
const isProbe = (request: IncomingMessage): boolean => request.method === 'GET' && PROBES.includes(request.url ?? '');

/** Headers a request may carry once (RFC 9110 §5.3): a proxy may read another copy. */
const SINGLE_HEADERS = ['host', 'authorization', 'content-type', 'content-length'];

const malformed = (message: string): ErrorBody => ({
  error: ErrorCode.BadRequest,
  message: `Malformed HTTP request: ${message}`,
});

/** What llhttp lets through and the contract refuses: the version, repeated headers, Host, codings. */
function framingRefusal(request: IncomingMessage): ErrorBody | undefined {
  if (request.httpVersionMajor !== 1 || request.httpVersionMinor > 1) {
    return malformed(`HTTP/${request.httpVersion} is not supported; use HTTP/1.1`);
  }
  // Node keeps the first of a repeated header: its raw list says how many came.
  const counts = [0, 0, 0, 0];
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const at = raw[i].length >= 4 && raw[i].length <= 14 ? SINGLE_HEADERS.indexOf(raw[i].toLowerCase()) : -1;
    if (at !== -1 && ++counts[at] > 1) return malformed(`more than one ${SINGLE_HEADERS[at]} header`);
  }
  if (counts[0] === 0 && request.httpVersionMinor === 1) return malformed('no Host header');
  const coding = request.headers['transfer-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
    return malformed(`Transfer-Encoding "${coding.slice(0, 64)}" is not supported; only chunked is`);
  }
  return undefined;
}

/**
 * What llhttp does not refuse, the drain and MAX_IN_FLIGHT, before the body is read. Each request
 * is opened in OpenRequests, so that a refusal of later bytes on its connection waits for its answer.
 */
@Injectable()
export class RequestGate {
  private readonly served = new WeakMap<Duplex, number>();
  private readonly ignored = new WeakMap<Duplex, number>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly limits: ClientLimits,
    private readonly requests: OpenRequests,
    private readonly errors: ErrorResponses,
  ) {}

  readonly use = (request: Request, response: ServerResponse, next: () => void): void => {
    const socket = request.socket;
    // Arrived after an answer that closes the connection: never run.
    if (this.requests.isClosing(socket) || this.pastLastAnswer(request)) return void this.ignore(socket);
    // Probes (tens a minute) and Swagger UI's files are not traced.
    const traced = this.config.tracing !== undefined && !isProbe(request) && !isDocs(request);
    const span = traced ? startRequestSpan(request) : undefined;
    this.requests.open(request, response, span);
    if (!this.admitted(request, response)) return;
    if (span === undefined) next();
    else withSpan(span, next);
  };

  private admitted(request: IncomingMessage, response: ServerResponse): boolean {
    const refusal = framingRefusal(request);
    if (refusal !== undefined) {
      // Where this request ends is in doubt: nothing after it on the connection is read.
      response.setHeader('Connection', 'close');
      this.errors.write(request, response, refusal);
      return false;
    }
    const expect = request.httpVersionMinor === 1 ? request.headers.expect : undefined; // RFC 9110 §10.1.1
    if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
      this.errors.write(request, response, {
        error: ErrorCode.ExpectationFailed,
        message: 'Unsupported Expect header: only 100-continue is understood',
      });
      return false;
    }
    const { draining } = this.requests.phase;
    if (draining) response.setHeader('Connection', 'close');
    if (isProbe(request)) return true;
    if (draining) {
      this.errors.unavailable(request, response, 'The server is shutting down; try again');
      return false;
    }
    // The last request says close; one pipelined past it, before that answer began, is refused and closes instead.
    const served = this.served.get(request.socket) ?? 0;
    if (served === this.limits.requests) response.setHeader('Connection', 'close');
    if (served > this.limits.requests) {
      for (const open of this.requests.openOn(request.socket)) if (!open.headersSent) open.removeHeader('Connection');
      const body = { error: ErrorCode.ServiceUnavailable, message: 'This connection has served all its requests' };
      this.errors.write(request, response, body, { 'Retry-After': '0', Connection: 'close' });
      return false;
    }
    if (this.requests.size > this.config.maxInFlight) {
      this.errors.unavailable(request, response, 'The server is at capacity; try again shortly');
      return false;
    }
    // What follows a request asking to upgrade is the server's to decide: here, nothing.
    if (request.headers.upgrade !== undefined) {
      response.setHeader('Connection', 'close');
      this.requests.closing(request.socket);
    }
    return true;
  }

  /**
   * Node's parser reads on after every request, whatever the pause, and keeps each request until the
   * connection closes: one that sends as many requests again as a connection serves is cut.
   */
  private ignore(socket: Duplex): void {
    const ignored = (this.ignored.get(socket) ?? 0) + 1;
    this.ignored.set(socket, ignored);
    if (ignored > this.limits.requests) socket.destroy();
    else socket.pause();
  }

  /** Counts the connection's requests, probes aside: true for one past the last once that answer has begun. */
  private pastLastAnswer(request: IncomingMessage): boolean {
    if (isProbe(request)) return false;
    const served = (this.served.get(request.socket) ?? 0) + 1;
    this.served.set(request.socket, served);
    return served > this.limits.requests && [...this.requests.openOn(request.socket)].every((o) => o.headersSent);
  }
}
