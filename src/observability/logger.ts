import { Inject, Injectable, type LoggerService } from '@nestjs/common';
import { Logger as NestPinoLogger, PinoLogger } from 'nestjs-pino';
import pino, { type Logger } from 'pino';
import { isatty } from 'node:tty';
import pretty from 'pino-pretty';
import type { LogFormat, LogLevel } from '../config/configuration';
import { Metrics } from './metrics';

/**
 * Log lines go to stdout off the event loop: pino's own destination (sonic-boom, asynchronous,
 * each write whatever has gathered while the last one was under way), with a bound
 * pino's default does not set: at most BUFFERED_LOG_BYTES wait. Past that, while nobody reads
 * stdout, lines are dropped and counted (in a line of their own once stdout drains) rather than
 * held in memory. A synchronous destination would instead stop every request whenever stdout
 * is slow to read. Lines are not held back to make larger writes: under load each write already
 * carries everything logged while the previous one was under way.
 */
const BUFFERED_LOG_BYTES = 16 * 1024 * 1024;
/**
 * The most one write carries. One write completes per turn of the event loop, and under a storm
 * of connections a turn can take a tenth of a second or more: with sonic-boom's default (16 KB)
 * the log falls behind what the requests write and drops lines, even into a file. Large
 * enough for whatever a long turn logs; bounded, because each write copies what it carries into
 * one buffer.
 */
const MAX_LOG_WRITE_BYTES = 4 * 1024 * 1024;
/** How long a stopping process waits for its last log lines to reach stdout. */
const LOG_FLUSH_DEADLINE_MS = 2_000;

/**
 * pino's ISO time (`,"time":"2026-11-24T07:30:00.123Z"`), formatted once per millisecond: under
 * load many lines share one, and formatting a date for each line would be a visible share of
 * what the line costs (see docs/performance-log.md).
 */
let isoTimeMs = Number.NaN;
let isoTimeText = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== isoTimeMs) {
    isoTimeMs = now;
    isoTimeText = `,"time":"${new Date(now).toISOString()}"`;
  }
  return isoTimeText;
}

/** The DI token of the process's one pino logger (createRootLogger). */
export const ROOT_LOGGER = 'ROOT_LOGGER';

/** Where the log goes: stdout, unless a test says otherwise. */
export interface LogDestination {
  fd: number;
  /** The most that may wait to be written; past it, lines are dropped and counted. */
  bufferBytes: number;
}

/**
 * The process's one pino logger: request lines and Nest's own logs go through it. JSON lines
 * with ISO times and level names, for whatever collects them; or, for a person at a terminal
 * (`format` auto and stdout a TTY, or pretty), one readable line each, by pino-pretty.
 */
export function createRootLogger(
  level: LogLevel,
  { fd, bufferBytes }: LogDestination = { fd: 1, bufferBytes: BUFFERED_LOG_BYTES },
  format: LogFormat = 'auto',
): Logger {
  if (format === 'pretty' || (format === 'auto' && isatty(fd))) {
    // Synchronous: a terminal is read as it is written, and no line is lost at exit.
    return pino(
      { level },
      pretty({
        destination: fd,
        sync: true,
        colorize: isatty(fd),
        translateTime: 'SYS:HH:MM:ss.l',
        singleLine: true,
        messageFormat: '{if context}[{context}] {end}{msg}',
        ignore: 'pid,hostname,context',
      }),
    );
  }
  // A pipe for stdout is then non-blocking, as Node makes it: a write it cannot take now fails
  // (EAGAIN, tried again later) rather than holding a thread, or the exit, until somebody reads.
  if (fd === 1) void process.stdout;
  let exiting = false;
  // Before pino's own exit hook, which would retry a write that stdout refuses (EAGAIN) every
  // 100 ms, synchronously, for as long as nobody reads it: however the process ends, it writes
  // what stdout takes at once and drops the rest.
  process.once('exit', () => {
    exiting = true;
    try {
      destination.flushSync();
    } catch {
      // stdout is full (or gone): what is left is dropped
    }
    destination.destroy();
  });
  const destination = pino.destination({
    dest: fd,
    sync: false,
    retryEAGAIN: () => !exiting,
    maxLength: bufferBytes,
    // A write still starts as soon as anything waits (a line is never shorter). With the default
    // 0, sonic-boom's flush(cb) calls back at once, even with a write under way: exitAfterLogs
    // would then exit before it, and lose it.
    minLength: 1,
    maxWrite: MAX_LOG_WRITE_BYTES,
    // Lines wait as buffers, not as one growing string: in its default mode sonic-boom measures
    // the waiting string's bytes on every write, which copies all of it again, line after line
    // (the largest single allocation of a create; see docs/performance-log.md).
    contentMode: 'buffer',
  });
  const lines = {
    // sonic-boom's typings know only its string mode; in buffer mode `write` takes a Buffer.
    write: (line: string): boolean => destination.write(Buffer.from(line) as unknown as string),
    flush: (done?: (error?: Error) => unknown): void => destination.flush(done),
  };
  const logger = pino(
    {
      level,
      timestamp: isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    lines,
  );
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
 * Ends the process with `code` once every line logged so far has been written, or once
 * LOG_FLUSH_DEADLINE_MS have passed with stdout not read (the exit hook then drops what is left).
 * `process.exit` alone loses lines when stdout is backed up: pino's exit hook writes what is
 * queued, but not the write still under way.
 */
export function exitAfterLogs(logger: Logger, code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), LOG_FLUSH_DEADLINE_MS);
  logger.flush(() => process.exit(code));
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

/** Nest's start-up narration (modules loaded, each route mapped): useful only when debugging. */
const NEST_CHATTER = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

class ServiceNestLogger extends NestPinoLogger {
  override log(message: unknown, ...optionalParams: unknown[]): void {
    if (message === NEST_READY) return;
    const context = optionalParams.at(-1);
    if (typeof context === 'string' && NEST_CHATTER.has(context)) super.debug(message, ...optionalParams);
    else super.log(message, ...optionalParams);
  }
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
