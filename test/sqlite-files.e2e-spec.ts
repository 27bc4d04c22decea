import { copyFileSync, renameSync, rmSync, statSync, truncateSync } from 'node:fs';
import Database from 'better-sqlite3';
import request from 'supertest';
import { testStoreKind } from './support/databases';
import { startTestApp, type TestApp } from './support/app';
import { PlantStore } from '../src/plants/plant-store';
import { plantRow } from '../src/plants/plants.service';

const describeOnSqlite = testStoreKind() === 'sqlite' ? describe : describe.skip;

/** Copies the log into the database file, as any checkpoint does, so that it has pages to lose. */
function checkpoint(path: string): void {
  const db = new Database(path);
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } finally {
    db.close();
  }
}

/** A valid SQLite file smaller than the store: what `cp other.sqlite store.sqlite` writes in place. */
function smallerStore(path: string): string {
  const other = `${path}.other`;
  new Database(other).close();
  expect(statSync(other).size).toBeLessThan(statSync(path).size);
  return other;
}

/**
 * An operator (or a script) deletes, replaces or cuts short the store's files under the running
 * server.
 * Whatever it writes after that would be lost or kept apart from every other process, so from
 * then on it answers 503, says down on /health, and logs the file, and never answers 200 again.
 */
describeOnSqlite('SQLite files deleted or replaced under the server', () => {
  let t: TestApp;
  let path: string;
  const log: string[] = [];
  let id = 8_000_000;
  beforeEach(async () => {
    log.length = 0;
    t = await startTestApp({}, { log });
    path = t.databaseUrl.replace(/^sqlite:/, '');
  });
  afterEach(async () => {
    await t.close();
  });

  const create = () =>
    request(t.server).post('/plants').set('Authorization', `Bearer ${t.token}`).send({ id: id++, name: 'watched' });

  it.each([
    ['the -wal file deleted', () => rmSync(`${path}-wal`), '-wal', 'deleted'],
    ['the -shm file deleted', () => rmSync(`${path}-shm`), '-shm', 'deleted'],
    ['the database file deleted', () => rmSync(path), '', 'deleted'],
    [
      'the database file replaced',
      () => {
        copyFileSync(path, `${path}.copy`);
        renameSync(`${path}.copy`, path);
      },
      '',
      'replaced',
    ],
    ['the -wal file truncated', () => truncateSync(`${path}-wal`, 0), '-wal', 'truncated'],
    [
      'the database file truncated',
      () => {
        checkpoint(path);
        truncateSync(path, 0);
      },
      '',
      'truncated',
    ],
    [
      'the database file overwritten in place by a smaller store',
      () => {
        checkpoint(path);
        copyFileSync(smallerStore(path), path);
      },
      '',
      'truncated',
    ],
  ])('%s: 503 from then on, /health down, and a log line naming the file', async (_case, act, suffix, what) => {
    expect((await create()).status).toBe(200);
    act();
    for (let i = 0; i < 3; i++) {
      const response = await create();
      expect(response.body).toEqual({ error: 503, message: expect.any(String) });
    }
    expect((await request(t.server).get('/health')).status).toBe(503);
    expect(log.some((line) => line.includes(`the SQLite file ${path}${suffix} was ${what}`))).toBe(true);
  });
});

describeOnSqlite('the SQLite plant store, on its own', () => {
  it('looks at its files under the write lock before each batch: a log cut short since the last commit is never written after', async () => {
    const t = await startTestApp();
    try {
      const path = t.databaseUrl.replace(/^sqlite:/, '');
      const store = t.app.get(PlantStore);
      await expect(store.create(plantRow({ id: 1n, name: 'before' }))).resolves.toBe('created');
      // No request, so no token read, in between: only the store's own look can see it.
      truncateSync(`${path}-wal`, 0);
      await expect(store.create(plantRow({ id: 2n, name: 'after' }))).rejects.toThrow(/was truncated/);
    } finally {
      await t.close();
    }
  });
});
