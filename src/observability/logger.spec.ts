import { execFileSync } from 'node:child_process';
import fs, { constants, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { createRootLogger } from './logger';

describe('the root logger', () => {
  it('drops what it cannot hold while stdout is not read, and says how much once it is', async () => {
    // A real pipe, unread at first: it holds 64 KB, the logger at most `bufferBytes` more.
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-log-'));
    const fifo = join(dir, 'log');
    execFileSync('mkfifo', [fifo]);
    // The logger's destination owns this descriptor from here on (and closes it if it ends).
    const fd = openSync(fifo, 'r+');
    try {
      const logger = createRootLogger('info', { fd, bufferBytes: 16 * 1024 });
      const lines = 2000; // ~240 KB: far more than both can hold
      for (let i = 0; i < lines; i++) logger.info({ i, pad: 'x'.repeat(150) }, 'line');

      let text = '';
      // Read as Node reads a pipe (non-blocking, polled), so that it can be stopped at any time.
      const reader = new Socket({ fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK), writable: false });
      reader.on('data', (chunk) => (text += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`no count line in:\n${text.slice(-500)}`)), 10_000);
        const check = setInterval(() => {
          if (/dropped \d+ log lines/.test(text)) {
            clearInterval(check);
            clearTimeout(deadline);
            resolve();
          }
        }, 20);
      });
      await new Promise((resolve) => logger.flush(resolve));
      reader.destroy();

      const entries = text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string; dropped?: number; i?: number });
      const report = entries.find((entry) => entry.dropped !== undefined);
      const written = entries.filter((entry) => entry.msg === 'line');
      expect(report?.dropped).toBeGreaterThan(0);
      // Every line is either written, whole, or counted.
      expect(written.length + report!.dropped!).toBe(lines);
      expect(written.map((entry) => entry.i)).toEqual([...written.map((entry) => entry.i)].sort((a, b) => a! - b!));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps up with turns that each log much (a storm of connections): one write takes all that waits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-log-'));
    const writes = jest.spyOn(fs, 'write');
    try {
      const fd = openSync(join(dir, 'log'), 'w');
      const logger = createRootLogger('info', { fd, bufferBytes: 2 * 1024 * 1024 });
      // One turn logs ~350 KB, as a loaded server's turn can: the first line's write begins at
      // once, and what the turn adds meanwhile waits for it. It must leave in one more write, not
      // in 16 KB pieces (one a turn, they would leave megabytes waiting on a busy server).
      for (let i = 0; i < 1000; i++) logger.info({ i, pad: 'x'.repeat(250) }, 'line');
      await new Promise((resolve) => logger.flush(resolve));
      const sizes = writes.mock.calls.filter(([to]) => to === fd).map(([, data]) => (data as unknown as Buffer).length);
      expect(sizes.length).toBe(2);
      expect(sizes[1]).toBeGreaterThan(300 * 1024);
    } finally {
      writes.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** What a logger in `format` writes to a file for one line. */
  function written(format: 'json' | 'pretty'): string {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-log-'));
    try {
      const file = join(dir, 'log');
      const logger = createRootLogger('info', { fd: openSync(file, 'w'), bufferBytes: 1024 * 1024 }, format);
      logger.info({ context: 'Store', n: 1 }, 'opened');
      logger.flush();
      return readFileSync(file, 'utf8');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('writes JSON lines with ISO times and level names, for whatever collects them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-log-'));
    try {
      const file = join(dir, 'log');
      const logger = createRootLogger('info', { fd: openSync(file, 'w'), bufferBytes: 1024 * 1024 }, 'json');
      logger.info({ context: 'Store', n: 1 }, 'opened');
      await new Promise((resolve) => logger.flush(resolve));
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
        level: 'info',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        context: 'Store',
        msg: 'opened',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes one readable line per entry for a person at a terminal', () => {
    expect(written('pretty')).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: \[Store\] opened \{"n":1\}\n$/);
  });
});
