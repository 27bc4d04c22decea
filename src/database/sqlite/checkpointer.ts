import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { DataSource } from 'typeorm';
import type { CheckpointerData, CheckpointerReport } from './checkpointer.worker.mjs';

export const CHECKPOINT_INTERVAL_MS = 100;

/** Under steady writes a passive checkpoint never catches up: past this, one holds commits back. */
export const WAL_BOUND_BYTES = 64 * 1024 * 1024;

const LOCK_WAIT_MS = 1_000;

/** How long a stop waits for the thread: a checkpoint may be waiting for a lock. */
const STOP_WAIT_MS = LOCK_WAIT_MS + 1_000;

/** SQLite's own checkpoint would run inside a commit, on the event loop: a thread does it instead. */
export class SqliteCheckpointer implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Store');
  private thread?: Worker;
  /** The serving connection's own checkpoint (every this many pages), given back on stop. */
  private autocheckpointPages = 0;

  constructor(private readonly dataSource: DataSource) {}

  async onModuleInit(): Promise<void> {
    const path = this.dataSource.options.database;
    if (typeof path !== 'string' || path === ':memory:') return;
    const data: CheckpointerData = {
      path,
      intervalMs: CHECKPOINT_INTERVAL_MS,
      boundBytes: WAL_BOUND_BYTES,
      lockWaitMs: LOCK_WAIT_MS,
    };
    const [{ wal_autocheckpoint }] =
      await this.dataSource.query<{ wal_autocheckpoint: number }[]>('PRAGMA wal_autocheckpoint');
    this.autocheckpointPages = wal_autocheckpoint;
    // The log is started over, never cut shorter (no `journal_size_limit`): commits overwrite
    // the file the thread wrote out to its bound.
    await this.dataSource.query('PRAGMA wal_autocheckpoint = 0');
    // The thread's own module, beside this one: compiled (.mjs) in dist/, as TypeScript under the tests.
    const worker = `checkpointer.worker.${extname(__filename) === '.ts' ? 'mts' : 'mjs'}`;
    const thread = new Worker(join(__dirname, worker), { workerData: data });
    this.thread = thread;
    thread.unref();
    thread.on('error', (error: Error) => this.logger.error(`the checkpointer stopped: ${error.message}`));
    await new Promise<void>((ready) => {
      thread.once('exit', () => ready());
      thread.on('message', (report: CheckpointerReport) => {
        if ('failed' in report) {
          this.logger.warn(`checkpoints are failing (${report.failed}); the log (-wal) grows until they work again`);
        } else if ('recovered' in report) {
          this.logger.log('checkpoints work again');
        } else {
          if (report.notWrittenOut !== undefined) {
            this.logger.warn(
              `the log (-wal) could not be written out to ${WAL_BOUND_BYTES / (1024 * 1024)} MB (${report.notWrittenOut}); ` +
                'commits cost more until it has grown there',
            );
          }
          ready();
        }
      });
    });
  }

  async onModuleDestroy(): Promise<void> {
    const thread = this.thread;
    if (thread === undefined) return;
    this.thread = undefined;
    const exited = once(thread, 'exit').then(() => true);
    thread.postMessage('stop');
    // A timer that holds the process open: the thread does not, and the drain's last line must come.
    const late = new AbortController();
    const stopped = await Promise.race([exited, sleep(STOP_WAIT_MS, false, { signal: late.signal })]);
    late.abort();
    if (!stopped) await thread.terminate();
    // Until the store closes, its own connection checkpoints again.
    if (this.dataSource.isInitialized) {
      await this.dataSource.query(`PRAGMA wal_autocheckpoint = ${this.autocheckpointPages}`);
    }
  }
}
