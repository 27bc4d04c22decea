/**
 * @slow 13 s: waits out the 5 s lock wait, on each store
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { freshDatabase, testStoreKind } from '../support/databases';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { readyAgain } from '../support/probes';
import { sleep, timed } from '../support/sockets';

async function create(server: ServerProcess, token: string, id: number): Promise<unknown> {
  const response = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ id, name: 'locked out' }),
  });
  return response.json();
}

const describeOnSqlite = testStoreKind() === 'sqlite' ? describe : describe.skip;
const describeOnPostgres = testStoreKind() === 'postgres' ? describe : describe.skip;

describeOnSqlite('a SQLite file locked by another process', () => {
  it('keeps answering everyone else, answers creates 503 after the wait, is ready again by itself, and logs the outage once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-lock-'));
    const databaseUrl = `sqlite:${join(dir, 'store.sqlite')}`;
    const token = await createToken(databaseUrl, 'lock');
    const server = await startServer({ DATABASE_URL: databaseUrl });
    const other = new Database(join(dir, 'store.sqlite'));
    try {
      other.exec('BEGIN IMMEDIATE'); // holds the write lock
      const pending = timed(() => create(server, token, 1));
      await sleep(300);
      const health = await timed(() => fetch(`${server.url}/health`));
      // A wait in SQLite's busy handler would stop the event loop for the rest of the lock's 5 s.
      expect(health.value.status).toBe(200);
      expect(health.ms).toBeLessThan(4_000);
      const refusal = await timed(() => fetch(`${server.url}/plants`, { method: 'POST' }));
      expect(refusal.ms).toBeLessThan(4_000);
      expect(await refusal.value.json()).toMatchObject({ error: 401 });
      const locked = await pending;
      expect(locked.value).toEqual({ error: 503, message: expect.any(String) });
      expect(locked.ms).toBeGreaterThan(4_000);
      expect(locked.ms).toBeLessThan(15_000); // bounded: far from the jest timeout, not tight
      expect(await create(server, token, 2)).toMatchObject({ error: 503 });
      expect((await fetch(`${server.url}/health/ready`)).status).toBe(503);

      other.exec('ROLLBACK');
      // No create: a balancer that took the instance out sends only its probe.
      await readyAgain(server.url);
      expect(await create(server, token, 3)).toEqual({ name: 'locked out' });
      await sleep(100);
      const lines = server.output();
      expect(lines.match(/store outage started/g)).toHaveLength(1);
      expect(lines.match(/store outage ended/g)).toHaveLength(1);
    } finally {
      other.close();
      await stopServer(server);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeOnPostgres('a PostgreSQL table locked by another connection', () => {
  /** A server on a fresh database, with `table` locked by another connection (`other`) when `check` begins. */
  async function whileLocked(
    table: 'plant' | 'api_token',
    check: (at: { server: ServerProcess; token: string; other: pg.Client }) => Promise<void>,
  ): Promise<void> {
    const database = await freshDatabase();
    const token = await createToken(database.url, 'lock');
    const server = await startServer({ DATABASE_URL: database.url });
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      await check({ server, token, other });
    } finally {
      await other.end();
      await stopServer(server);
      await database.drop();
    }
  }

  it('answers creates 503 within the statement bound, commits none of them later, and keeps serving', () =>
    whileLocked('plant', async ({ server, token, other }) => {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => timed(() => create(server, token, 100 + i))),
      );
      for (const { value, ms } of results) {
        expect(value).toEqual({ error: 503, message: expect.any(String) });
        expect(ms).toBeLessThan(15_000); // bounded: far from the jest timeout, not tight
      }
      const health = await timed(() => fetch(`${server.url}/health`));
      expect(health.ms).toBeLessThan(10_000);
      expect(health.value.status).toBe(503);
      await other.query('ROLLBACK');
      await readyAgain(server.url);
      const stored = await other.query('SELECT count(*)::int AS n FROM plant');
      expect(stored.rows[0]).toEqual({ n: 0 });
      expect(await create(server, token, 200)).toEqual({ name: 'locked out' });
      const lines = server.output();
      expect(lines.match(/store outage started/g)).toHaveLength(1);
      expect(lines.match(/store outage ended/g)).toHaveLength(1);
    }));

  it("bounds a token read by the server's own lock wait: 503, nothing left waiting, then serves again", () =>
    whileLocked('api_token', async ({ server, token, other }) => {
      expect(await create(server, token, 1)).toEqual({ error: 503, message: expect.any(String) });
      // The server's lock_timeout ended the read; without it, its backend would wait on as long as the lock.
      const waiting = await other.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      expect(waiting.rows[0]).toEqual({ n: 0 });
      await other.query('ROLLBACK');
      await readyAgain(server.url);
      expect(await create(server, token, 2)).toEqual({ name: 'locked out' });
    }));
});
