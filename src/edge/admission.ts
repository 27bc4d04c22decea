import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { CONFIG, type ConfigSlice } from '../config/configuration';
import { type ErrorBody, ErrorCode } from '../errors/error-codes';
import { failureCodes, writeError, writeUnavailable } from '../errors/error-response';
import { UNMATCHED_ROUTE } from '../observability/metrics';
import { RequestLog } from '../observability/logger';
import { endRequestSpan, startRequestSpan, tracing, withSpan } from '../observability/tracing';
import { Drain } from './drain';
import { RESPONSE_DEADLINE_MS } from './http-server';

/** The health probes' paths: the health controller's routes, and what the edge never sheds. */
export const PROBE_PATHS = { health: '/health', live: '/health/live', ready: '/health/ready' } as const;
const PROBES = new Set<string>(Object.values(PROBE_PATHS));

/**
 * A health probe: answered while draining and never shed under load (the store's and readiness
 * probes then say 503 themselves; a liveness probe refused would get the process restarted).
 */
export function isProbe(request: IncomingMessage): boolean {
  return request.method === 'GET' && PROBES.has(request.url ?? '');
}

/** A client's own id is kept when it is short and plain; anything else gets a fresh UUID. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(request: Pick<IncomingMessage, 'headers'>): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && SANE_REQUEST_ID.test(sent) ? sent : randomUUID();
}

/** Headers a request may carry at most once (RFC 9110 §5.3): a proxy may read another copy. */
const SINGLE_HEADERS = ['host', 'authorization', 'content-type', 'content-length'] as const;
type SingleHeader = (typeof SINGLE_HEADERS)[number];

function malformed(message: string): ErrorBody {
  return { error: ErrorCode.BadRequest, message: `Malformed HTTP request: ${message}` };
}

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
  // RFC 9112 §6.1: Node would take `gzip, chunked` as chunked and hand over a body still compressed.
  const coding = request.headers['transfer-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
    return malformed(`Transfer-Encoding "${coding.slice(0, 64)}" is not supported; only chunked is`);
  }
  return undefined;
}

/**
 * What Node's HTTP server would otherwise answer with a bare status line, or let through: the
 * protocol version, repeated single headers, a missing Host, an unknown transfer coding (400);
 * an `Expect` other than `100-continue` (417). A request that asks to upgrade the connection is
 * answered as any other, with `Connection: close`: Node's parser reads nothing more of a
 * connection after such a request, so a request sent behind it would never be answered.
 */
function refusedAtTheDoor(request: IncomingMessage, response: ServerResponse): boolean {
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

/**
 * The route template a request matched, for the metrics: Nest's routes have no parameters, and
 * Swagger UI's files (under `docs`) are one route. Anything else is `unmatched`, never its raw path.
 */
function routeOf(request: Request, docs: string): string {
  const route = (request.route as { path?: unknown } | undefined)?.path;
  if (typeof route === 'string') return route;
  const path = request.path;
  return path === docs || path.startsWith(`${docs}/`) || path === `${docs}-json` || path === `${docs}-yaml`
    ? docs
    : UNMATCHED_ROUTE;
}

/** Whoever the guard let in, as it puts them on the request: their token's name. */
interface Authenticated {
  tokenName?: string;
}

function authenticated(request: Request): Authenticated | undefined {
  return request.user;
}

/**
 * The client a trusted proxy names in X-Forwarded-For (Express's `request.ip`, which parses the
 * header on every call: so only with TRUST_PROXY), when that is an IP address; anything else
 * there (`not-an-ip`, `spoofed-admin`) is text a client wrote, so the peer's address is logged.
 */
function forwardedClient(request: Request): string | undefined {
  const named = request.ip;
  return named !== undefined && isIP(named) !== 0 ? named : request.socket.remoteAddress;
}

/**
 * Calls `then` when the handler of a response whose connection is gone answers it (calls
 * `end`), or after RESPONSE_DEADLINE_MS if it never does. Only ever on this rare path, so the
 * response's own `end` is wrapped rather than every response paying for a hook.
 */
function whenAnswered(response: ServerResponse, then: () => void): void {
  let done = false;
  const once = (): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    then();
  };
  const timer = setTimeout(once, RESPONSE_DEADLINE_MS).unref();
  const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
  response.end = ((...args: unknown[]) => {
    const result = end(...args);
    once();
    return result;
  }) as ServerResponse['end'];
}

/**
 * Every request's first steps, as Nest's request hook (inside the Express layer Nest's adapter
 * puts first for every request anyway: each further layer costs a request Express's matching):
 * its X-Request-Id and, with tracing on, its span, current for everything the request does; its
 * one log line (RequestLog), written when it is answered, including one whose client went away
 * first (its handler runs on: a create still commits, so a committed write is always in the
 * log); then whether it reaches the router at all: the framing checks above; while draining,
 * none but the probes (503, `Connection: close`); past MAX_IN_FLIGHT requests in this process,
 * none but the probes (503 with `Retry-After`, its connection closed), so that latency and
 * memory stay bounded however many clients connect. A request is in flight from here until its
 * response is done.
 */
@Injectable()
export class Admission {
  private inFlight = 0;
  private readonly done = (): void => void this.inFlight--;
  private readonly maxInFlight: number;
  private readonly viaProxy: boolean;

  constructor(
    private readonly drain: Drain,
    private readonly requestLog: RequestLog,
    @Inject(CONFIG.edge) config: ConfigSlice<'edge'>,
  ) {
    this.maxInFlight = config.maxInFlight;
    this.viaProxy = config.trustProxy !== false && config.trustProxy !== 0;
  }

  /** The hook, for Swagger UI served under `docsPath`: one route for the metrics, never traced. */
  requestHook(docsPath: string): (request: Request, response: ServerResponse, next: () => void) => void {
    const docs = `/${docsPath}`;
    return (request, response, next) => {
      const started = process.hrtime.bigint();
      const requestId = requestIdOf(request);
      response.setHeader('X-Request-Id', requestId);
      // Probes (tens a minute per instance) and Swagger UI's files are not traced.
      const span =
        tracing.on && !isProbe(request) && routeOf(request, docs) !== docs
          ? startRequestSpan(request.method, request.headers)
          : undefined;
      const ids = span?.spanContext();
      const log = (clientClosed: boolean): void => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        const line = {
          requestId,
          method: request.method,
          target: request.url,
          route: routeOf(request, docs),
          status: response.statusCode,
          error: failureCodes.get(response),
          durationMs: Math.round(seconds * 1e5) / 100,
          clientClosed,
          tokenName: authenticated(request)?.tokenName,
          client: this.viaProxy ? forwardedClient(request) : request.socket.remoteAddress,
          traceId: ids?.traceId,
          spanId: ids?.spanId,
        };
        if (span !== undefined) endRequestSpan(span, line);
        this.requestLog.answered(line);
      };
      // A response closes once: `on` spares every request the wrapper `once` makes and its removal.
      response.on('close', () => {
        if (response.writableFinished) log(false);
        else if (response.writableEnded) log(true);
        else whenAnswered(response, () => log(true));
      });
      const admit = (): void => {
        if (!this.refused(request, response)) next();
      };
      if (span === undefined) admit();
      else withSpan(span, admit);
    };
  }

  /** True when this answered the request; otherwise the request goes on to the router. */
  refused(request: IncomingMessage, response: ServerResponse): boolean {
    if (refusedAtTheDoor(request, response)) return true;
    if (this.drain.draining) {
      response.setHeader('Connection', 'close');
      if (!isProbe(request)) {
        writeUnavailable(request, response, 'The server is shutting down; try again');
        return true;
      }
    }
    if (this.inFlight >= this.maxInFlight && !isProbe(request)) {
      writeUnavailable(request, response, 'The server is at capacity; try again shortly');
      return true;
    }
    this.inFlight++;
    response.on('close', this.done);
    return false;
  }
}
