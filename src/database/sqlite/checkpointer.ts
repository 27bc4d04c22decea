import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { DataSource } from 'typeorm';
import { Checkpointer } from '../checkpointer';
import { nativeSqlite } from './handle';

/** How often the log's new pages are copied into the database file. */
export const CHECKPOINT_INTERVAL_MS = 100;

/**
 * The log (`-wal`) may hold this much before a checkpoint starts it over. Under steady writes a
 * checkpoint that leaves the writer be never catches up with it, and the log only grows; past
 * this bound one checkpoint holds commits back (each retries within the lock wait) while it
 * copies what is left, and the next commit writes the log from its start again.
 */
export const WAL_BOUND_BYTES = 64 * 1024 * 1024;

/** How long the thread's connection waits for a lock (SQLite's busy timeout). */
const LOCK_WAIT_MS = 1_000;

/** How long a stop waits for the thread to close its connection: a checkpoint may be waiting for a lock. */
const STOP_WAIT_MS = LOCK_WAIT_MS + 1_000;

interface ThreadData {
  path: string;
  /** better-sqlite3, resolved here: the thread's source has no module of its own to resolve from. */
  driver: string;
  intervalMs: number;
  /** WAL_BOUND_BYTES. */
  boundBytes: number;
  lockWaitMs: number;
}

/**
 * What the thread reports: it has the log open (once, before the server serves; with why its
 * file could not be written out to the bound, if it could not), a checkpoint that failed, or the
 * first that worked after one.
 */
type ThreadReport = { ready: true; notWrittenOut?: string } | { failed: string } | { recovered: true };

/**
 * The checkpointer's thread, started from this function's source text (`eval`), so that it runs
 * alike from `dist/` and under ts-jest: it uses nothing but `require` and its `workerData`.
 */
function checkpointThread(): void {
  /* eslint-disable @typescript-eslint/no-require-imports -- source run as text has no imports */
  const threads = require('node:worker_threads') as typeof import('node:worker_threads');
  const fs = require('node:fs') as typeof import('node:fs');
  const { parentPort } = threads;
  const { path, driver, intervalMs, boundBytes, lockWaitMs } = threads.workerData as ThreadData;
  const Database = require(driver) as typeof import('better-sqlite3');
  /* eslint-enable @typescript-eslint/no-require-imports */
  // A checkpoint that starts the log over waits this long for the commit under way; so does a
  // stop for a checkpoint under way.
  const db = new Database(path, { timeout: lockWaitMs });
  // A checkpoint syncs the database file before the log may be written over: every commit the
  // server acknowledged stays on disk, in the log or in the file.
  db.pragma('synchronous = FULL');
  /** The bound in the store's pages, the unit of the log. */
  const boundPages = Math.floor(boundBytes / (db.pragma('page_size', { simple: true }) as number));
  let failing = false;
  let lastLog = 0;
  /** One checkpoint; how long until the next. */
  const checkpoint = (): number => {
    try {
      const [{ busy, log }] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number }[];
      const restart = busy === 0 && log > boundPages;
      if (restart) db.pragma('wal_checkpoint(RESTART)');
      if (failing) parentPort?.postMessage({ recovered: true } satisfies ThreadReport);
      failing = false;
      const growing = !restart && log > lastLog;
      lastLog = restart ? 0 : log;
      // Past half the bound while commits go on, the next look comes at once: one interval's
      // commits, and the checkpoint's own time, could otherwise carry the log well past it.
      return growing && log > boundPages / 2 ? 0 : intervalMs;
    } catch (error) {
      // Another process's checkpoint under way is no failure: it does the same work.
      if ((error as { code?: string }).code === 'SQLITE_BUSY') return intervalMs;
      if (!failing) parentPort?.postMessage({ failed: (error as Error).message } satisfies ThreadReport);
      failing = true;
      return intervalMs;
    }
  };
  /**
   * Writes the log's file out to the bound, past whatever it holds, unless it is that long
   * already: a commit that lengthens the file makes its sync write the file system's
   * metadata too, so until the log had once reached its bound every commit would cost more. Under
   * the write lock, so that no connection appends a frame meanwhile; zeros past the last frame
   * are no frame to SQLite, as the old frames a restarted log leaves there are not. Says why not,
   * if it could not.
   */
  const writeOut = (): string | undefined => {
    try {
      db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      return (error as Error).message;
    }
    try {
      const fd = fs.openSync(`${path}-wal`, 'r+');
      try {
        let size = fs.fstatSync(fd).size;
        if (size >= boundBytes) return undefined;
        const zeros = Buffer.alloc(1024 * 1024);
        while (size < boundBytes) size += fs.writeSync(fd, zeros, 0, Math.min(zeros.length, boundBytes - size), size);
        fs.fdatasyncSync(fd);
        return undefined;
      } finally {
        fs.closeSync(fd);
      }
    } catch (error) {
      return (error as Error).message;
    } finally {
      db.exec('ROLLBACK');
    }
  };
  // The first checkpoint opens the log. A connection that opened it only after an operator had
  // deleted it would make a new one, and the server would report the log replaced, not deleted.
  const firstWait = checkpoint();
  const notWrittenOut = writeOut();
  let timer = setTimeout(function next() {
    timer = setTimeout(next, checkpoint());
  }, firstWait);
  parentPort?.postMessage({ ready: true, notWrittenOut } satisfies ThreadReport);
  parentPort?.once('message', () => {
    clearTimeout(timer);
    db.close();
    parentPort.close();
  });
}

/**
 * SQLite: the serving connection does not checkpoint (`wal_autocheckpoint = 0`); a thread of its
 * own, with its own connection, copies the log into the database file every
 * CHECKPOINT_INTERVAL_MS (back to back while a growing log is past half its bound) and starts
 * the log over once it is past WAL_BOUND_BYTES. SQLite's own checkpoint runs
 * inside a commit, on the event loop, and writes back every page the log holds since the last.
 * Before the server serves, the thread writes the log's file out to WAL_BOUND_BYTES, so that
 * commits overwrite it rather than lengthen it.
 * A failure is logged once, and once again when checkpoints work again; the log grows meanwhile.
 */
export class SqliteCheckpointer extends Checkpointer implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Store');
  private thread?: Worker;
  /** The serving connection's own checkpoint (every this many pages), given back on stop. */
  private autocheckpointPages = 0;

  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async onModuleInit(): Promise<void> {
    const path = this.dataSource.options.database;
    if (typeof path !== 'string' || path === ':memory:') return;
    const db = nativeSqlite(this.dataSource);
    const data: ThreadData = {
      path,
      driver: require.resolve('better-sqlite3'),
      intervalMs: CHECKPOINT_INTERVAL_MS,
      boundBytes: WAL_BOUND_BYTES,
      lockWaitMs: LOCK_WAIT_MS,
    };
    this.autocheckpointPages = db.pragma('wal_autocheckpoint', { simple: true }) as number;
    // The log is started over, never cut shorter (no `journal_size_limit`): a -wal file that
    // shrinks is what SqliteFiles takes for an operator's truncation, and stops the store.
    db.pragma('wal_autocheckpoint = 0');
    const thread = new Worker(`(${checkpointThread.toString()})()`, { eval: true, workerData: data });
    this.thread = thread;
    thread.unref();
    let ready = (): void => undefined;
    const started = new Promise<void>((resolve) => (ready = resolve));
    thread.on('message', (report: ThreadReport) => {
      if ('ready' in report) {
        if (report.notWrittenOut !== undefined) {
          this.logger.warn(
            `the log (-wal) could not be written out to ${WAL_BOUND_BYTES / (1024 * 1024)} MB (${report.notWrittenOut}); ` +
              'commits cost more until it has grown there',
          );
        }
        ready();
      } else if ('failed' in report) {
        this.logger.warn(`checkpoints are failing (${report.failed}); the log (-wal) grows until they work again`);
      } else {
        this.logger.log('checkpoints work again');
      }
    });
    thread.on('error', (error: Error) => this.logger.error(`the checkpointer stopped: ${error.message}`));
    thread.once('exit', () => ready());
    await started;
  }

  async onModuleDestroy(): Promise<void> {
    const thread = this.thread;
    if (thread === undefined) return;
    this.thread = undefined;
    const exited = once(thread, 'exit');
    thread.postMessage('stop');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)));
    const stopped = await Promise.race([exited.then(() => true), late.then(() => false)]);
    clearTimeout(timer);
    if (!stopped) await thread.terminate();
    // Until the store closes, its own connection checkpoints again.
    if (this.dataSource.isInitialized) {
      nativeSqlite(this.dataSource).pragma(`wal_autocheckpoint = ${this.autocheckpointPages}`);
    }
  }
}
