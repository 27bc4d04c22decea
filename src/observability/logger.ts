import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isatty } from 'node:tty';
import type { LoggerService } from '@nestjs/common';
import { Logger as NestPinoLogger, PinoLogger } from 'nestjs-pino';
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogFormat, LogLevel } from '../config/configuration';

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

/** Exits with `code` once every line so far is written, or 2 s later. */
export function exitAfterLogs(logger: Logger, code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 2_000).unref();
  logger.flush(() => process.exit(code));
}

/** Nest's start-up narration: for debugging only. Its "started" comes before the listen, which may fail. */
const NEST_CHATTER = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

class ServiceNestLogger extends NestPinoLogger {
  override log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams.at(-1);
    if (typeof context === 'string' && NEST_CHATTER.has(context)) super.debug(message, ...optionalParams);
    else super.log(message, ...optionalParams);
  }
}

/** Nest's own logs as JSON lines through the same logger (nestjs-pino), from its first line. */
export function nestLogger(logger: Logger): LoggerService {
  return new ServiceNestLogger(new PinoLogger({ pinoHttp: { logger } }), {});
}

/** A request target's path: never its query or fragment (either may carry a token), at most 256 characters. */
export function loggedPath(target: string | undefined): string {
  let path = target ?? '';
  if (!path.startsWith('/')) path = URL.parse(path)?.pathname ?? ''; // absolute-form: no userinfo
  const end = path.search(/[?#]/);
  if (end !== -1) path = path.slice(0, end);
  return path.length > 256 ? `${path.slice(0, 256)}…` : path;
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(request: IncomingMessage): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && SANE_REQUEST_ID.test(sent) ? sent : randomUUID();
}

/** One request's line, once answered; never a header, a body, a query or a token. */
export interface AnswerLine {
  method: string | undefined;
  target: string | undefined;
  /** Undefined when the client left before its answer began. */
  status: number | undefined;
  durationMs: number;
  requestId: string;
  error: number | undefined;
  token: string | undefined;
  client: string | undefined;
  traceId?: string;
  spanId?: string;
}

/** Written by the gate, which already sees every answer end: pino-http's child logger per request costs too much here. */
export function logAnswer(logger: Logger, line: AnswerLine): void {
  const { method, target, status, ...rest } = line;
  logger.info(
    {
      req: { method, path: loggedPath(target) },
      res: { status },
      ...rest,
      clientClosed: status === undefined || undefined,
    },
    'request completed',
  );
}
