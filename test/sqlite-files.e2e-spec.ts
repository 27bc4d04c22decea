import { copyFileSync, renameSync, rmSync } from 'node:fs';
import request from 'supertest';
import { testStoreKind } from './support/databases';
import { startTestApp, type TestApp } from './support/app';

const describeOnSqlite = testStoreKind() === 'sqlite' ? describe : describe.skip;

/**
 * An operator (or a script) deletes or replaces the store's files under the running server.
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
