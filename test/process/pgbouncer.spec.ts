import { join } from 'node:path';
import { jest } from '@jest/globals';
import pg from 'pg';
import { pgbouncerPath, startPgBouncer, type PgBouncer } from '../../scripts/pgbouncer.mjs';
import { freshDatabase, testStoreKind, type TestDatabase } from '../support/databases';
import { createToken, startServer, stopServer, type ServerProcess } from '../support/server-process';
import { run } from '../support/spawn';
import { readyAgain } from '../support/probes';
import { sleep } from '../support/sockets';

jest.setTimeout(90_000);

const STORE_CLI = join(process.cwd(), 'dist/cli/store.js');

const runs = testStoreKind() === 'postgres' && pgbouncerPath() !== undefined;

/**
 * The pooler between the service and PostgreSQL goes away in the middle of a burst and comes
 * back: creates answer 503 while it is away, the service recovers by itself, and every create
 * it acknowledged is stored. Runs with `npm run test:postgres` or `test:pgbouncer` where
 * Debian's pgbouncer is installed (CI installs it).
 */
(runs ? describe : describe.skip)('PgBouncer (transaction mode) stopped in the middle of a burst', () => {
  let database: TestDatabase;
  let pooler: PgBouncer;
  let server: ServerProcess;
  let url: string;
  let directUrl: string;
  beforeAll(async () => {
    database = await freshDatabase();
    const name = new URL(database.url).pathname.slice(1);
    pooler = await startPgBouncer({ upstream: process.env.TEST_DATABASE_URL!, mode: 'transaction' });
    url = pooler.url(name);
    const direct = new URL(process.env.TEST_DATABASE_URL!);
    direct.pathname = `/${name}`;
    directUrl = direct.toString();
  });
  afterAll(async () => {
    if (server !== undefined) await stopServer(server);
    await pooler?.close();
    await database?.drop();
  });

  it('answers 503 while it is down, recovers by itself, and loses no acknowledged create', async () => {
    const token = await createToken(url, 'burst');
    server = await startServer({ DATABASE_URL: url });
    const answers: { id: number; answer: number | string }[] = [];
    let nextId = 1;
    let stop = false;
    const sender = async (): Promise<void> => {
      while (!stop) {
        const id = nextId++;
        let answer: number | string;
        try {
          const response = await fetch(`${server.url}/plants`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ id, name: 'burst' }),
            signal: AbortSignal.timeout(15_000),
          });
          answer = response.status === 200 ? 200 : ((await response.json()) as { error: number }).error;
        } catch (error) {
          answer = `${(error as Error).name}: ${String((error as { cause?: { code?: string; message?: string } }).cause?.code ?? (error as { cause?: { message?: string } }).cause?.message)}`;
        }
        answers.push({ id, answer });
        if (answer !== 200) await sleep(20);
      }
    };
    const senders = Array.from({ length: 8 }, sender);
    await sleep(1_000);
    await pooler.stop();
    await sleep(1_500);
    await pooler.start();
    // Recovers by itself: keep sending until creates are stored again.
    const recovered = Date.now();
    while (Date.now() - recovered < 20_000 && answers.slice(-8).some((entry) => entry.answer !== 200)) await sleep(100);
    await sleep(500);
    stop = true;
    await Promise.all(senders);

    const counts = new Map<number | string, number>();
    for (const { answer } of answers) counts.set(answer, (counts.get(answer) ?? 0) + 1);
    expect([...counts.keys()].filter((answer) => answer !== 200 && answer !== 503)).toEqual([]);
    expect(counts.get(503) ?? 0).toBeGreaterThan(0);
    expect(answers.slice(-8).map((entry) => entry.answer)).toEqual(Array.from({ length: 8 }, () => 200));

    const direct = new pg.Client({ connectionString: directUrl });
    await direct.connect();
    try {
      const stored = new Set(
        (await direct.query<{ id: string }>('SELECT id::text AS id FROM plant')).rows.map((row) => Number(row.id)),
      );
      const acknowledged = answers.filter((entry) => entry.answer === 200).map((entry) => entry.id);
      expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    } finally {
      await direct.end();
    }
  });
});

/** Session mode too: each client connection keeps one server connection while it lasts. */
(runs ? describe : describe.skip)('PgBouncer in session mode', () => {
  it('serves creates, their replays and conflicts, and the operator commands', async () => {
    const database = await freshDatabase();
    const pooler = await startPgBouncer({ upstream: process.env.TEST_DATABASE_URL!, mode: 'session' });
    const url = pooler.url(new URL(database.url).pathname.slice(1));
    let server: ServerProcess | undefined;
    try {
      const token = await createToken(url, 'session');
      server = await startServer({ DATABASE_URL: url });
      const create = async (body: string): Promise<number> => {
        const response = await fetch(`${server!.url}/plants`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body,
        });
        return response.status === 200 ? 200 : ((await response.json()) as { error: number }).error;
      };
      const answers = await Promise.all([
        ...Array.from({ length: 20 }, (_, i) => create(`{"id": ${i}, "name": "session"}`)),
        ...Array.from({ length: 20 }, (_, i) => create(`{"id": ${i}, "name": "session"}`)),
      ]);
      expect(answers).toEqual(Array.from({ length: 40 }, () => 200));
      expect(await create('{"id": 1, "name": "other"}')).toBe(409);
      const status = await run(process.execPath, [STORE_CLI, 'status'], { DATABASE_URL: url });
      expect(status.stdout).toMatch(/\npending: none\n$/);
    } finally {
      if (server !== undefined) await stopServer(server);
      await pooler.close();
      await database.drop();
    }
  });
});

/**
 * PgBouncer in front but no server behind it for a while: paused (`PAUSE`, as an operator does
 * for a switch-over), or stopped and started again. A create through a paused pooler never
 * reaches PostgreSQL, so no server-side bound can start: the service bounds the wait itself, and
 * answers 503 (logged as 503, not as a client that left); readiness says down, and comes back by
 * itself once the pooler serves again, with no create sent.
 */
(runs ? describe : describe.skip)('PgBouncer paused or restarted', () => {
  let database: TestDatabase;
  let pooler: PgBouncer;
  let server: ServerProcess;
  let token: string;
  let name: string;
  beforeAll(async () => {
    database = await freshDatabase();
    name = new URL(database.url).pathname.slice(1);
    pooler = await startPgBouncer({ upstream: process.env.TEST_DATABASE_URL!, mode: 'transaction' });
    token = await createToken(pooler.url(name), 'paused');
    server = await startServer({ DATABASE_URL: pooler.url(name) });
  });
  afterAll(async () => {
    if (server !== undefined) await stopServer(server);
    await pooler?.close();
    await database?.drop();
  });

  const create = async (id: number): Promise<{ answer: number | string; ms: number }> => {
    const started = Date.now();
    try {
      const response = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ id, name: 'paused' }),
        signal: AbortSignal.timeout(20_000),
      });
      const answer = response.status === 200 ? 200 : ((await response.json()) as { error: number }).error;
      return { answer, ms: Date.now() - started };
    } catch (error) {
      return { answer: String((error as { cause?: unknown }).cause ?? error), ms: Date.now() - started };
    }
  };

  it('paused: creates answered 503 within the 3 s pool bound, readiness down, then back by itself', async () => {
    expect((await create(1)).answer).toBe(200);
    await pooler.admin(`PAUSE "${name}"`);
    try {
      const waits = await Promise.all([create(2), create(3), create(4)]);
      for (const { answer, ms } of waits) {
        expect(answer).toBe(503);
        expect(ms).toBeGreaterThan(2_500);
        expect(ms).toBeLessThan(15_000); // bounded: far from the jest timeout, not tight
      }
      expect((await fetch(`${server.url}/health/ready`)).status).toBe(503);
    } finally {
      await pooler.admin(`RESUME "${name}"`);
    }
    await readyAgain(server.url);
    expect((await create(5)).answer).toBe(200);
    // A store stall is the store's, never counted or logged as a client's failure.
    const lines = server
      .output()
      .split('\n')
      .filter((line) => line.includes('"path":"/plants"'));
    expect(lines.filter((line) => line.includes('clientClosed'))).toEqual([]);
    expect(lines.filter((line) => line.includes('"error":503'))).toHaveLength(3);
  });

  it('stopped and started again: readiness back by itself, with no create sent', async () => {
    await pooler.stop();
    try {
      expect((await create(10)).answer).toBe(503);
      expect((await fetch(`${server.url}/health/ready`)).status).toBe(503);
    } finally {
      await pooler.start();
    }
    await readyAgain(server.url);
    expect((await create(11)).answer).toBe(200);
  });
});
