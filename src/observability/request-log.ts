import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { ROOT_LOGGER } from './logger';
import { Metrics } from './metrics';

/** No request writes more than this much path into the log, whatever it sent. */
export const MAX_LOGGED_PATH = 256;

/**
 * The path of the request target, as routing sees it: never the query string or the fragment
 * (either could carry a token), nor the userinfo of an absolute-form target
 * (`http://user:TOKEN@host/plants`), and at most MAX_LOGGED_PATH characters of it.
 */
export function loggedPath(target: string | undefined): string {
  let path = target ?? '';
  if (!path.startsWith('/')) {
    try {
      path = new URL(path).pathname; // absolute-form; an authority or `*` has no path worth logging
    } catch {
      path = '';
    }
  }
  const end = path.search(/[?#]/);
  if (end !== -1) path = path.slice(0, end);
  return path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}…` : path;
}

export interface RequestLine {
  requestId: string;
  method: string | undefined;
  target: string | undefined;
  status: number;
  error?: number;
  durationMs?: number;
  /** Why Node's parser refused the bytes, when it did. */
  parserError?: string;
  /** The client closed the connection before the answer reached it: the work was still done. */
  clientClosed?: boolean;
  /** The name of the token the request was made with (never the token itself), once checked. */
  tokenName?: string;
  /** The client's address: the peer's, or what TRUST_PROXY lets X-Forwarded-For say. */
  client?: string;
  /** The OpenTelemetry trace and span of the request, when it is traced. */
  traceId?: string;
  spanId?: string;
}

/**
 * Every answer on the public port passes here exactly once, whatever wrote it (the application,
 * or the edge's own refusals): its one log line and its count in the metrics.
 */
@Injectable()
export class RequestLog {
  constructor(
    @Inject(ROOT_LOGGER) private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {}

  answered(line: RequestLine & { route: string }): void {
    this.log(line);
    this.metrics.answered(line);
  }

  /** The one request log line, for requests that reached Express and those that never did. */
  private log(line: RequestLine): void {
    const logger = this.logger;
    if (!logger.isLevelEnabled('info')) return;
    // Field by field, in this order: spreading `absent ? {} : { field }` cost an object per field
    // on every request.
    const entry: Record<string, unknown> = {
      requestId: line.requestId,
      req: { method: line.method, path: loggedPath(line.target) },
    };
    if (line.client !== undefined) entry.client = line.client;
    if (line.tokenName !== undefined) entry.token = line.tokenName;
    if (line.traceId !== undefined) entry.traceId = line.traceId;
    if (line.spanId !== undefined) entry.spanId = line.spanId;
    entry.res = { status: line.status };
    if (line.error !== undefined) entry.error = line.error;
    if (line.parserError !== undefined) entry.parserError = line.parserError;
    if (line.durationMs !== undefined) entry.durationMs = line.durationMs;
    if (line.clientClosed === true) {
      entry.clientClosed = true;
      logger.info(entry, 'request completed after the client closed the connection');
    } else {
      logger.info(entry, 'request completed');
    }
  }
}
