import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import { Logger as NestPinoLogger, PinoLogger } from 'nestjs-pino';
import pino, { type Logger } from 'pino';
import type { LogLevel } from '../config/configuration';
import { failureCodeOf } from '../errors/error-response';
import { RESPONSE_DEADLINE_MS } from '../http/http-server';
import { requestIdOf } from '../http/request-id';

/**
 * Log lines go to stdout off the event loop: pino's own destination (sonic-boom, asynchronous,
 * writes of up to 16 KB, whatever has gathered while the last one was under way), with a bound
 * pino's default does not set: at most BUFFERED_LOG_BYTES wait. Past that, while nobody reads
 * stdout, lines are dropped and counted (in a line of their own once stdout drains) rather than
 * held in memory. A synchronous destination would instead stop every request whenever stdout
 * is slow to read. (Gathering lines into fewer, larger writes on purpose did not pay: under load
 * each write already carries everything logged while the previous one was under way.)
 */
const BUFFERED_LOG_BYTES = 16 * 1024 * 1024;
/** How long a stopping process waits for its last log lines to reach stdout. */
const LOG_FLUSH_DEADLINE_MS = 2_000;

/** Where the log goes: stdout, unless a test says otherwise. */
export interface LogDestination {
  fd: number;
  /** The most that may wait to be written; past it, lines are dropped and counted. */
  bufferBytes: number;
}

/** The process's one pino logger: request lines and Nest's own logs go through it. */
export function createRootLogger(
  level: LogLevel,
  { fd, bufferBytes }: LogDestination = { fd: 1, bufferBytes: BUFFERED_LOG_BYTES },
): Logger {
  const destination = pino.destination({
    dest: fd,
    sync: false,
    maxLength: bufferBytes,
    // A write still starts as soon as anything waits (a line is never shorter). With the default
    // 0, sonic-boom's flush(cb) calls back at once, even with a write under way: exitAfterLogs
    // would then exit before it, and lose it.
    minLength: 1,
  });
  const logger = pino({ level }, destination);
  let dropped = 0;
  destination.on('drop', () => {
    if (dropped++ > 0) return;
    // 'drain': what was waiting has been written, so there is room for this line again.
    destination.once('drain', () => {
      logger.warn({ dropped }, `dropped ${dropped} log lines: stdout was not being read fast enough`);
      dropped = 0;
    });
  });
  return logger;
}

/**
 * Ends the process with `code` once every line logged so far has been written. `process.exit`
 * alone loses lines when stdout is backed up: pino's exit hook writes what is queued, but not
 * the write still under way. A stdout that nobody reads holds it up for at most
 * LOG_FLUSH_DEADLINE_MS.
 */
export function exitAfterLogs(logger: Logger, code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), LOG_FLUSH_DEADLINE_MS);
  logger.flush(() => process.exit(code));
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
  /** The client closed the connection before the answer reached it: the work was still done. */
  clientClosed?: boolean;
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
      ...(line.clientClosed === true ? { clientClosed: true } : {}),
    },
    line.clientClosed === true ? 'request completed after the client closed the connection' : 'request completed',
  );
}

/**
 * Gives every response its X-Request-Id and writes one JSON line per request: request id,
 * method, path, status, the contract error code of a failure, and duration. Headers and bodies
 * are never logged, so neither is a token. (pino-http does this too, but builds three child
 * loggers per request; one line is all we need, and it is a hot path.)
 *
 * Every request the application saw gets its line, including one whose client went away first:
 * its handler runs on (a create still commits), so the line is written when the handler answers,
 * with its status and `clientClosed`, and a committed write is always in the log.
 */
export function requestLogger(logger: Logger) {
  return (request: IncomingMessage, response: ServerResponse, next: () => void): void => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(request);
    response.setHeader('X-Request-Id', requestId);
    const log = (clientClosed: boolean): void =>
      logRequest(logger, {
        requestId,
        method: request.method,
        target: request.url,
        status: response.statusCode,
        error: failureCodeOf(response),
        durationMs: Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100,
        clientClosed,
      });
    response.once('close', () => {
      if (response.writableFinished) log(false);
      else if (response.writableEnded) log(true);
      else whenAnswered(response, () => log(true));
    });
    next();
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

/**
 * Nest's own logs (start-up, the exception filter, the store outage log) as JSON lines through
 * the same pino logger, by nestjs-pino's LoggerService, handed to NestFactory at creation so
 * that even the first line is JSON.
 */
export function nestLogger(logger: Logger): LoggerService {
  return new ServiceNestLogger(new PinoLogger({ pinoHttp: { logger } }), {});
}

/**
 * Nest says this once its modules are ready, before the server listens, which may still fail
 * (a port in use): the service's own line ("listening on …") says when it serves.
 */
const NEST_READY = 'Nest application successfully started';

class ServiceNestLogger extends NestPinoLogger {
  override log(message: unknown, ...optionalParams: unknown[]): void {
    if (message === NEST_READY) return;
    super.log(message, ...optionalParams);
  }
}
