import { isatty } from 'node:tty';
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
