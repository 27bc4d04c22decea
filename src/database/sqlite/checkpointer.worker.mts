import { closeSync, fdatasyncSync, fstatSync, openSync, writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

export type CheckpointerData = { path: string; intervalMs: number; boundBytes: number; lockWaitMs: number };

/** What it reports: it has the log open (and whether its file could be written out), a failure, a recovery. */
export type CheckpointerReport = { ready: true; notWrittenOut?: string } | { failed: string } | { recovered: true };

const { path, intervalMs, boundBytes, lockWaitMs } = workerData as CheckpointerData;
const report = (message: CheckpointerReport): void => parentPort?.postMessage(message);
// A checkpoint that starts the log over waits this long for the commit under way.
const db = new Database(path, { timeout: lockWaitMs });
// A checkpoint syncs the database file before the log is written over: every acknowledged commit
// stays on disk, in the log or in the file.
db.pragma('synchronous = FULL');
const boundPages = Math.floor(boundBytes / (db.pragma('page_size', { simple: true }) as number));
let failing = false;
let lastLog = 0;

function checkpoint(): number {
  try {
    const [{ busy, log }] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number }[];
    const restart = busy === 0 && log > boundPages;
    if (restart) db.pragma('wal_checkpoint(RESTART)');
    if (failing) report({ recovered: true });
    failing = false;
    const growing = !restart && log > lastLog;
    lastLog = restart ? 0 : log;
    // Past half the bound while commits go on, the next look comes at once.
    return growing && log > boundPages / 2 ? 0 : intervalMs;
  } catch (error) {
    // Another process's checkpoint under way does the same work.
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return intervalMs;
    if (!failing) report({ failed: (error as Error).message });
    failing = true;
    return intervalMs;
  }
}

/** Extending the log costs every commit a metadata sync; pre-written zeros are never read as frames. */
function writeOut(): string | undefined {
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (error) {
    return (error as Error).message;
  }
  try {
    const fd = openSync(`${path}-wal`, 'r+');
    try {
      let size = fstatSync(fd).size;
      const zeros = Buffer.alloc(1024 * 1024);
      while (size < boundBytes) size += writeSync(fd, zeros, 0, Math.min(zeros.length, boundBytes - size), size);
      fdatasyncSync(fd);
      return undefined;
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    return (error as Error).message;
  } finally {
    db.exec('ROLLBACK');
  }
}

// The first checkpoint opens the log, before the server serves.
const firstWait = checkpoint();
const notWrittenOut = writeOut();
let timer = setTimeout(function next() {
  timer = setTimeout(next, checkpoint());
}, firstWait);
report({ ready: true, notWrittenOut });
parentPort?.once('message', () => {
  clearTimeout(timer);
  db.close();
  parentPort?.close();
});
