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
    // sonic-boom measures the chunk a line joins on every write: chunks stay small, so lines stay cheap.
    maxWrite: 16 * 1024,
    minLength: 1, // with 0, flush(cb) calls back with a write still under way
    retryEAGAIN: () => !exiting,
  });
  const logger = pino(
    { level, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
    destination,
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
