import { isIP } from 'node:net';
import type { ServerResponse } from 'node:http';
import type { Request } from 'express';
import type { Logger } from 'pino';
import { failureCodeOf } from '../errors/error-response';
import { answered } from '../logging/logging';
import { type Metrics, UNMATCHED_ROUTE } from '../metrics/metrics';
import { RESPONSE_DEADLINE_MS } from './http-server';
import { endRequestSpan, spanIdOf, startRequestSpan, traceIdOf, tracingEnabled, withSpan } from '../tracing/tracing';
import { isProbe } from './probes';
import { requestIdOf } from './request-id';

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
 * Gives every response its X-Request-Id, writes one JSON line per request (request id, method,
 * path, client address, token name, status, the contract error code of a failure, duration, and
 * the trace id when tracing is on), counts it in the metrics and, with tracing on, makes its span
 * the current one for everything the request does. Headers and bodies are never logged, so
 * neither is a token. (pino-http does this too, but builds three child loggers per request; one
 * line is all we need, and it is a hot path.)
 *
 * Every request the application saw gets its line, including one whose client went away first:
 * its handler runs on (a create still commits), so the line is written when the handler answers,
 * with its status and `clientClosed`, and a committed write is always in the log.
 */
/**
 * The client a trusted proxy names in X-Forwarded-For (Express's `request.ip`, which parses the
 * header on every call: so only with TRUST_PROXY), when that is an IP address; anything else
 * there (`not-an-ip`, `spoofed-admin`) is text a client wrote, so the peer's address is logged.
 */
function forwardedClient(request: Request): string | undefined {
  const named = request.ip;
  return named !== undefined && isIP(named) !== 0 ? named : request.socket.remoteAddress;
}

export function requestLogger(logger: Logger, metrics: Metrics, viaProxy: boolean, docsPath: string) {
  const docs = `/${docsPath}`;
  return (request: Request, response: ServerResponse, next: () => void): void => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(request);
    response.setHeader('X-Request-Id', requestId);
    // Probes (tens a minute per instance) and Swagger UI's files are not traced.
    const traced = tracingEnabled() && !isProbe(request) && routeOf(request, docs) !== docs;
    const span = traced ? startRequestSpan(request.method, request.headers) : undefined;
    const log = (clientClosed: boolean): void => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const line = {
        requestId,
        method: request.method,
        target: request.url,
        route: routeOf(request, docs),
        status: response.statusCode,
        error: failureCodeOf(response),
        durationMs: Math.round(seconds * 1e5) / 100,
        clientClosed,
        tokenName: authenticated(request)?.tokenName,
        client: viaProxy ? forwardedClient(request) : request.socket.remoteAddress,
        traceId: traceIdOf(span),
        spanId: spanIdOf(span),
      };
      endRequestSpan(span, line);
      answered(logger, metrics, line);
    };
    response.once('close', () => {
      if (response.writableFinished) log(false);
      else if (response.writableEnded) log(true);
      else whenAnswered(response, () => log(true));
    });
    withSpan(span, next);
  };
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
