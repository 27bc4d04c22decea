import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import { Logger as NestPinoLogger, PinoLogger } from 'nestjs-pino';
import pino, { type Logger } from 'pino';
import type { LogLevel } from '../config/configuration';
import { failureCodeOf } from '../errors/error-response';
import { requestIdOf } from '../http/request-id';

/** The process's one pino logger: request lines and Nest's own logs go through it. */
export function createRootLogger(level: LogLevel): Logger {
  return pino({ level });
}

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
}

/** The one request log line, for requests that reached Express and those that never did. */
export function logRequest(logger: Logger, line: RequestLine): void {
  if (!logger.isLevelEnabled('info')) return;
  logger.info(
    {
      requestId: line.requestId,
      req: { method: line.method, path: loggedPath(line.target) },
      res: { status: line.status },
      ...(line.error === undefined ? {} : { error: line.error }),
      ...(line.parserError === undefined ? {} : { parserError: line.parserError }),
      ...(line.durationMs === undefined ? {} : { durationMs: line.durationMs }),
    },
    'request completed',
  );
}

/**
 * Gives every response its X-Request-Id and writes one JSON line per request when it ends:
 * request id, method, path, status, the contract error code of a failure, and duration.
 * Headers and bodies are never logged, so neither is a token. (pino-http does this too, but
 * builds three child loggers per request; one line is all we need, and it is a hot path.)
 */
export function requestLogger(logger: Logger) {
  return (request: IncomingMessage, response: ServerResponse, next: () => void): void => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(request);
    response.setHeader('X-Request-Id', requestId);
    response.once('finish', () => {
      logRequest(logger, {
        requestId,
        method: request.method,
        target: request.url,
        status: response.statusCode,
        error: failureCodeOf(response),
        durationMs: Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100,
      });
    });
    next();
  };
}

/**
 * Nest's own logs (start-up, the exception filter, the store outage log) as JSON lines through
 * the same pino logger, by nestjs-pino's LoggerService, handed to NestFactory at creation so
 * that even the first line is JSON.
 */
export function nestLogger(logger: Logger): LoggerService {
  return new NestPinoLogger(new PinoLogger({ pinoHttp: { logger } }), {});
}
