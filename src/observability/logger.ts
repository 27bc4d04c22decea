import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { isatty } from 'node:tty';
import type { Span } from '@opentelemetry/api';
import type { Request } from 'express';
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogFormat, LogLevel } from '../config/configuration';
import { type Metrics, UNMATCHED_ROUTE } from './metrics';
import { endRequestSpan } from './tracing';

export const ROOT_LOGGER = 'ROOT_LOGGER';

/** Lines written off the event loop to `fd`; one nobody reads drops (and counts) lines past `bufferBytes`. */
export function createRootLogger(
  level: LogLevel,
  { fd, bufferBytes } = { fd: 1, bufferBytes: 16 * 1024 * 1024 },
  format: LogFormat = 'auto',
): Logger {
  if (format === 'pretty' || (format === 'auto' && isatty(fd))) {
    const options = { destination: fd, sync: true, colorize: isatty(fd), singleLine: true };
    const layout = { translateTime: 'SYS:HH:MM:ss.l', messageFormat: '{if context}[{context}] {end}{msg}' };
    return pino({ level }, pretty({ ...options, ...layout, ignore: 'pid,hostname,context' }));
  }
  // Node makes a pipe it opens for stdout non-blocking: a write it cannot take fails and is retried.
  if (fd === 1) void process.stdout;
  let exiting = false;
  // Before pino's own exit hook, which would retry what stdout refuses for as long as nobody reads.
  process.once('exit', () => {
    exiting = true;
    try {
      destination.flushSync();
    } catch {
      // stdout full or gone: the rest is dropped
    }
    destination.destroy();
  });
  const destination = pino.destination({
    dest: fd,
    sync: false,
    maxLength: bufferBytes,
    maxWrite: 4 * 1024 * 1024, // a long turn under load logs much: one write takes it all
    minLength: 1, // with 0, flush(cb) calls back with a write still under way
    retryEAGAIN: () => !exiting,
    // In string mode sonic-boom measures the waiting text on every write: a backlog costs each line.
    contentMode: 'buffer',
  });
  // sonic-boom's typings know only its string mode; in buffer mode `write` takes a Buffer.
  const lines = {
    write: (line: string): boolean => destination.write(Buffer.from(line) as unknown as string),
    flush: (done?: (error?: Error) => unknown): void => destination.flush(done),
  };
  const logger = pino(
    { level, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
    lines,
  );
  let dropped = 0;
  destination.on('drop', () => {
    if (dropped++ > 0) return;
    destination.once('drain', () => {
      logger.warn({ dropped }, `dropped ${dropped} log lines: stdout was not being read fast enough`);
      dropped = 0;
    });
  });
  return logger;
}

/** A request target's path: never its query or fragment (either may carry a token), at most 256 characters. */
function loggedPath(target: string | undefined): string {
  let path = target ?? '';
  if (!path.startsWith('/')) path = URL.parse(path)?.pathname ?? ''; // absolute-form: no userinfo
  const end = path.search(/[?#]/);
  if (end !== -1) path = path.slice(0, end);
  return path.length > 256 ? `${path.slice(0, 256)}…` : path;
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function requestIdOf(request: IncomingMessage): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && SANE_REQUEST_ID.test(sent) ? sent : randomUUID();
}

const DOCS = /^\/docs(?:-json|-yaml)?(?:[/?]|$)/;

/** Whether a request is for Swagger UI's page, its files or the document. */
export const isDocs = (request: IncomingMessage): boolean => DOCS.test(request.url ?? '');

/** The route a request matched, for the metrics: never its raw path, whose values are unbounded. */
function routeOf(request: Request): string {
  const route = (request.route as { path?: unknown } | undefined)?.path;
  if (typeof route === 'string') return route;
  return isDocs(request) ? '/docs' : UNMATCHED_ROUTE;
}

/** What a request's observation writes to: the log (when `info` is on), the counts, and the contract code answered. */
export interface RequestObserver {
  logger: Logger | undefined;
  metrics: Metrics | null;
  /** Whether the client's address may be read from X-Forwarded-For (TRUST_PROXY). */
  trustProxy: boolean;
  errorOf(response: ServerResponse): number | undefined;
}

/**
 * The request's id (`X-Request-Id`) now; what to call once it is answered: its line (never a header,
 * a body, a query or a token), its count and its span. pino-http's child logger per request costs too much here.
 */
export function observeRequest(
  request: Request,
  response: ServerResponse,
  observer: RequestObserver,
  span?: Span,
): () => void {
  const started = process.hrtime.bigint();
  const requestId = requestIdOf(request);
  response.setHeader('X-Request-Id', requestId);
  const { logger, metrics } = observer;
  const named = logger !== undefined && observer.trustProxy ? request.ip : undefined;
  const client = named !== undefined && isIP(named) !== 0 ? named : logger ? request.socket.remoteAddress : undefined;
  return () => {
    const durationMs = Math.round(Number(process.hrtime.bigint() - started) / 1e3) / 1e3;
    const error = observer.errorOf(response);
    const status = response.headersSent ? response.statusCode : undefined;
    if (logger !== undefined) {
      const line = {
        req: { method: request.method, path: loggedPath(request.url) },
        res: { status },
        durationMs,
        requestId,
        error,
        token: (request as Request & { user?: { tokenName?: string } }).user?.tokenName,
        client,
        traceId: span?.spanContext().traceId,
        spanId: span?.spanContext().spanId,
        clientClosed: status === undefined || undefined,
      };
      logger.info(line, 'request completed');
    }
    if (metrics === null && span === undefined) return;
    const answer = { method: request.method, route: routeOf(request), status: response.statusCode, error, durationMs };
    metrics?.answered(answer);
    if (span !== undefined) endRequestSpan(span, answer);
  };
}
