import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { type ErrorBody, ErrorCode } from '../errors/error-codes';
import { closingSockets, failureCodes, writeError, writeUnavailable } from './error-response';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { logAnswer, requestIdOf, ROOT_LOGGER } from '../observability/logger';
import { Metrics, UNMATCHED_ROUTE } from '../observability/metrics';
import { endRequestSpan, startRequestSpan, withSpan } from '../observability/tracing';
import { ClientLimits } from './http-server';

/** The health probes' paths: never shed, answered while draining. */
export const PROBE_PATHS = { health: '/health', live: '/health/live', ready: '/health/ready' } as const;
const PROBES = new Set<string>(Object.values(PROBE_PATHS));
const isProbe = (request: IncomingMessage): boolean => request.method === 'GET' && PROBES.has(request.url ?? '');

/** Past this (after SHUTDOWN_DELAY), a drain still waiting gives up: exit 1. */
export const SHUTDOWN_DEADLINE_MS = 10_000;

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

const DOCS = /^\/docs(?:-json|-yaml)?(?:[/?]|$)/;

/** The route a request matched, for the metrics: never its raw path, whose values are unbounded. */
function routeOf(request: Request): string {
  const route = (request.route as { path?: unknown } | undefined)?.path;
  if (typeof route === 'string') return route;
  return DOCS.test(request.url) ? '/docs' : UNMATCHED_ROUTE;
}

/**
 * What llhttp does not refuse, the drain and MAX_IN_FLIGHT, before the body is read. It knows each
 * connection's open requests, so a refusal of later bytes waits for their answers.
 */
@Injectable()
export class RequestGate {
  private asked = false;
  /** Draining: every request but the probes is answered 503. */
  private draining = false;
  private readonly open = new Set<ServerResponse>();
  private readonly openOn = new WeakMap<Duplex, Set<ServerResponse>>();
  private readonly refusals = new WeakMap<Duplex, () => void>();
  private readonly served = new WeakMap<Duplex, number>();
  private readonly logging: boolean;

  constructor(
    @Inject(Metrics) private readonly metrics: Metrics | null,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(ROOT_LOGGER) private readonly logger: Logger,
    private readonly limits: ClientLimits,
  ) {
    this.logging = logger.isLevelEnabled('info');
  }

  readonly use = (request: Request, response: ServerResponse, next: () => void): void => {
    const socket = request.socket;
    // Arrived after an answer that closes the connection: never run, and nothing more read.
    if (closingSockets.has(socket) || this.pastLastAnswer(request)) return void socket.pause();
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(request);
    response.setHeader('X-Request-Id', requestId);
    const named = this.logging && this.config.trustProxy !== false ? request.ip : undefined;
    const client =
      named !== undefined && isIP(named) !== 0 ? named : this.logging ? request.socket.remoteAddress : undefined;
    this.open.add(response);
    this.openOnSocket(socket).add(response);
    // Probes (tens a minute) and Swagger UI's files are not traced.
    const traced = this.config.tracing !== undefined && !isProbe(request) && !DOCS.test(request.url);
    const span = traced ? startRequestSpan(request) : undefined;
    response.on('close', () => {
      this.closed(socket, response);
      const durationMs = Math.round(Number(process.hrtime.bigint() - started) / 1e3) / 1e3;
      const error = failureCodes.get(response);
      if (this.logging) {
        logAnswer(this.logger, {
          method: request.method,
          target: request.url,
          status: response.headersSent ? response.statusCode : undefined,
          durationMs,
          requestId,
          error,
          token: (request as Request & { user?: { tokenName?: string } }).user?.tokenName,
          client,
          traceId: span?.spanContext().traceId,
          spanId: span?.spanContext().spanId,
        });
      }
      if (this.metrics === null && span === undefined) return;
      const answer = {
        method: request.method,
        route: routeOf(request),
        status: response.statusCode,
        error,
        durationMs,
      };
      this.metrics?.answered(answer);
      if (span !== undefined) endRequestSpan(span, answer);
    });
    if (!this.admitted(request, response)) return;
    if (span === undefined) next();
    else withSpan(span, next);
  };

  private admitted(request: IncomingMessage, response: ServerResponse): boolean {
    const refusal = framingRefusal(request);
    if (refusal !== undefined) {
      // Where this request ends is in doubt: nothing after it on the connection is read.
      response.setHeader('Connection', 'close');
      writeError(request, response, refusal);
      return false;
    }
    const expect = request.httpVersionMinor === 1 ? request.headers.expect : undefined; // RFC 9110 §10.1.1
    if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
      writeError(request, response, {
        error: ErrorCode.ExpectationFailed,
        message: 'Unsupported Expect header: only 100-continue is understood',
      });
      return false;
    }
    if (this.draining) response.setHeader('Connection', 'close');
    if (isProbe(request)) return true;
    if (this.draining) {
      writeUnavailable(request, response, 'The server is shutting down; try again');
      return false;
    }
    // The last request says close; one pipelined past it, before that answer began, is refused and closes instead.
    const served = this.served.get(request.socket) ?? 0;
    if (served === this.limits.requests) response.setHeader('Connection', 'close');
    if (served > this.limits.requests) {
      for (const open of this.openOnSocket(request.socket)) if (!open.headersSent) open.removeHeader('Connection');
      const body = { error: ErrorCode.ServiceUnavailable, message: 'This connection has served all its requests' };
      writeError(request, response, body, { 'Retry-After': '0', Connection: 'close' });
      return false;
    }
    if (this.open.size > this.config.maxInFlight) {
      writeUnavailable(request, response, 'The server is at capacity; try again shortly');
      return false;
    }
    // What follows a request asking to upgrade is the server's to decide: here, nothing.
    if (request.headers.upgrade !== undefined) {
      response.setHeader('Connection', 'close');
      closingSockets.add(request.socket);
    }
    return true;
  }

  private closed(socket: Duplex, response: ServerResponse): void {
    this.open.delete(response);
    const left = this.openOnSocket(socket);
    left.delete(response);
    if (left.size > 0) return;
    const refusal = this.refusals.get(socket);
    this.refusals.delete(socket);
    refusal?.();
  }

  /** Counts the connection's requests, probes aside: true for one past the last once that answer has begun. */
  private pastLastAnswer(request: IncomingMessage): boolean {
    if (isProbe(request)) return false;
    const served = (this.served.get(request.socket) ?? 0) + 1;
    this.served.set(request.socket, served);
    return served > this.limits.requests && [...this.openOnSocket(request.socket)].every((o) => o.headersSent);
  }

  /** Runs `refuse` (which writes to `socket`) once every request open on it has been answered. */
  refuseAfterAnswers(socket: Duplex, refuse: () => void): void {
    if (this.refusals.has(socket) || socket.destroyed) return;
    if (this.openOnSocket(socket).size === 0) refuse();
    else this.refusals.set(socket, refuse);
  }

  /** The answer to the request on `socket` still arriving (its body incomplete), if one is. */
  readingResponse(socket: Duplex): ServerResponse | undefined {
    return [...this.openOnSocket(socket)].find((response) => !response.req.complete);
  }

  /** Whether a request on `socket` has arrived whole and waits for its answer to begin. */
  awaitingAnswer(socket: Duplex): boolean {
    return [...this.openOnSocket(socket)].some((response) => response.req.complete && !response.headersSent);
  }

  private openOnSocket(socket: Duplex): Set<ServerResponse> {
    let open = this.openOn.get(socket);
    if (open === undefined) this.openOn.set(socket, (open = new Set()));
    return open;
  }

  /** Asked to stop (SIGTERM): readiness fails from then on. */
  get stopping(): boolean {
    return this.asked;
  }

  /** Says whether this is the first time it is asked. */
  stop(): boolean {
    if (this.asked) return false;
    this.asked = true;
    return true;
  }

  /** Begins the drain: new requests are refused, and the answers still to come close their connections. */
  drain(): void {
    this.draining = true;
    for (const response of this.open) if (!response.headersSent) response.setHeader('Connection', 'close');
  }

  /** Resolves once every request open has been answered (its answer written, read or not). */
  async answeredAll(): Promise<void> {
    while ([...this.open].some((response) => !response.writableEnded)) await sleep(50);
  }
}
