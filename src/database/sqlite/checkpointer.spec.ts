import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { CHECKPOINT_INTERVAL_MS, SqliteCheckpointer, WAL_BOUND_BYTES } from './checkpointer';

describe('SqliteCheckpointer', () => {
  let dir: string;
  let path: string;
  let dataSource: DataSource;
  /** The connection under `dataSource`, as TypeORM's `prepareDatabase` hands it over. */
  let db: Database.Database;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-checkpointer-'));
    path = join(dir, 'store.sqlite');
    dataSource = await new DataSource({
      type: 'better-sqlite3',
      database: path,
      prepareDatabase: (handle: Database.Database) => {
        db = handle;
        handle.pragma('journal_mode = WAL');
      },
    }).initialize();
    // No fsync per commit: the test writes a hundred megabytes, and a crash is not what it is about.
    db.pragma('synchronous = OFF');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)');
  });
  afterEach(async () => {
    await dataSource.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Commits `megabytes` of rows, a page each, in transactions of a hundred, the event loop free between them. */
  async function write(megabytes: number): Promise<void> {
    const insert = db.prepare('INSERT INTO t (body) VALUES (randomblob(3000))');
    const batch = db.transaction(() => {
      for (let i = 0; i < 100; i++) insert.run();
    });
    for (let written = 0; written < megabytes * 1024 * 1024; written += 100 * 4096) {
      batch();
      await sleep(0);
    }
  }

  const walBytes = (): number => statSync(`${path}-wal`).size;

  /**
   * `write(megabytes)` a few at a time, each once the thread has written out all but the last few
   * to the database file (a page a row): the thread keeps pace however loaded the machine is.
   */
  async function writeInStep(megabytes: number): Promise<void> {
    const step = 4;
    for (let written = step; written <= megabytes; written += step) {
      await write(step);
      while (statSync(path).size < (written - 2 * step) * 1024 * 1024) await sleep(CHECKPOINT_INTERVAL_MS);
    }
  }

  it('keeps the log within its bound off the serving connection, which no longer checkpoints', async () => {
    const checkpointer = new SqliteCheckpointer(dataSource);
    await checkpointer.onModuleInit();
    try {
      expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      await writeInStep((WAL_BOUND_BYTES / (1024 * 1024)) * 1.5);
      // A few steps' writes may land past the bound before the checkpoint that starts it over.
      expect(walBytes()).toBeLessThan(WAL_BOUND_BYTES * 1.25);
      // What the log held is in the database file.
      expect(statSync(path).size).toBeGreaterThan(WAL_BOUND_BYTES);
    } finally {
      await checkpointer.onModuleDestroy();
    }
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
  });

  it('starts a log longer than its bound over without cutting the file shorter, which would stop the store', async () => {
    // As a server that stopped with its log past the bound leaves it.
    db.pragma('wal_autocheckpoint = 0');
    await write((WAL_BOUND_BYTES / (1024 * 1024)) * 1.25);
    const before = walBytes();
    const checkpointer = new SqliteCheckpointer(dataSource);
    await checkpointer.onModuleInit();
    try {
      await write((WAL_BOUND_BYTES / (1024 * 1024)) * 1.5);
      // The log in use (not the file, which keeps its size) comes back within the bound once the
      // thread has copied it out, however long that takes; only the thread starts it over.
      const logBytes = (): number => (db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0].log * 4096;
      while (logBytes() >= WAL_BOUND_BYTES * 1.25) await sleep(CHECKPOINT_INTERVAL_MS);
      expect(walBytes()).toBeGreaterThanOrEqual(before);
    } finally {
      await checkpointer.onModuleDestroy();
    }
  });

  it("writes the log's file out to its bound before the server serves, past the frames it holds, which recovery still reads", async () => {
    // Commits only in the log: a reader that began before them keeps any checkpoint from copying them.
    db.pragma('wal_autocheckpoint = 0');
    const reader = new Database(path);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM t').get();
    await write(1);
    const rows = db.prepare('SELECT count(*) FROM t').pluck().get();
    expect(rows).toBeGreaterThan(0);
    expect(walBytes()).toBeLessThan(WAL_BOUND_BYTES / 8);
    const checkpointer = new SqliteCheckpointer(dataSource);
    await checkpointer.onModuleInit();
    try {
      expect(walBytes()).toBe(WAL_BOUND_BYTES);
      // A copy of the files without the -shm is read as after a crash: from the log, frame by frame.
      const copy = join(dir, 'copy.sqlite');
      copyFileSync(path, copy);
      copyFileSync(`${path}-wal`, `${copy}-wal`);
      const recovered = new Database(copy, { readonly: true });
      try {
        expect(recovered.prepare('SELECT count(*) FROM t').pluck().get()).toBe(rows);
      } finally {
        recovered.close();
      }
    } finally {
      reader.close();
      await checkpointer.onModuleDestroy();
    }
  });
});
