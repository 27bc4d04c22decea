import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { freshDatabase, testStoreKind, type TestDatabase } from '../support/databases';
import { replyBody } from '../support/raw-http';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';

jest.setTimeout(60_000);

function open(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', () => undefined);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await work();
  return { value, ms: Date.now() - started };
}

describe('bounded time for every client', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let token: string;
  beforeAll(async () => {
    database = await freshDatabase();
    token = await createToken(database.url, 'abuse');
    server = await startServer({ DATABASE_URL: database.url });
  });
  afterAll(async () => {
    await stopServer(server);
    await database.drop();
  });

  it('answers a body that stalls with the Error body and a log line, then closes', async () => {
    const socket = await open(server.port);
    let reply = '';
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 100\r\n\r\n{"id": 1',
    );
    const { ms } = await timed(() => closed);
    expect(ms).toBeLessThan(25_000);
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(replyBody(reply)).toEqual({ error: 400, message: expect.stringMatching(/timed out/) });
    expect(reply).toMatch(/\r\nX-Request-Id: \S+\r\n/i);
    const requestId = /\r\nX-Request-Id: (\S+)\r\n/i.exec(reply)![1];
    await sleep(100);
    expect(server.output()).toContain(`"requestId":"${requestId}"`);
  });

  it('disconnects a client that stops reading its answers', async () => {
    const socket = await open(server.port);
    let received = 0;
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.pause(); // never reads: the server's writes back up
    const get = 'GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n';
    socket.write(get.repeat(20)); // ~30 MB of answers, far more than the kernel buffers hold
    await sleep(33_000); // past the 30 s response deadline
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.resume();
    await closed;
    const bundle = Number(
      (await fetch(`${server.url}/docs/swagger-ui-bundle.js`, { method: 'HEAD' })).headers.get('content-length'),
    );
    expect(bundle).toBeGreaterThan(100_000);
    expect(received).toBeLessThan(20 * bundle);
  });
});

describe('graceful shutdown with idle connections', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it.each(['nothing', 'half its headers'])(
    'closes a connection that sent %s at once, exits 0 promptly, and logs how long the drain took',
    async (what) => {
      const server = await startServer({ DATABASE_URL: database.url });
      const socket = await open(server.port);
      if (what !== 'nothing') socket.write('POST /plants HTTP/1.1\r\nHost: x\r\nContent-Ty');
      await sleep(200);
      const { value: code, ms } = await timed(() => {
        server.child.kill('SIGTERM');
        return server.exited;
      });
      socket.destroy();
      expect(code).toBe(0);
      expect(ms).toBeLessThan(3_000);
      const last = JSON.parse(server.output().trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(last.msg).toMatch(/^stopped/);
      expect(last.drainMs).toEqual(expect.any(Number));
    },
  );
});

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
  it('keeps answering everyone else, answers creates 503 after the wait, and logs the outage once', async () => {
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
      expect(health.value.status).toBe(200);
      expect(health.ms).toBeLessThan(500);
      const refusal = await timed(() => fetch(`${server.url}/plants`, { method: 'POST' }));
      expect(refusal.ms).toBeLessThan(500);
      expect(await refusal.value.json()).toMatchObject({ error: 401 });
      const locked = await pending;
      expect(locked.value).toEqual({ error: 503, message: expect.any(String) });
      expect(locked.ms).toBeGreaterThan(4_000);
      expect(locked.ms).toBeLessThan(7_000);
      expect(await create(server, token, 2)).toMatchObject({ error: 503 });

      other.exec('ROLLBACK');
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
  it('answers creates 503 within the statement bound, commits none of them later, and keeps serving', async () => {
    const database = await freshDatabase();
    const token = await createToken(database.url, 'lock');
    const server = await startServer({ DATABASE_URL: database.url });
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('LOCK TABLE plant IN ACCESS EXCLUSIVE MODE');
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => timed(() => create(server, token, 100 + i))),
      );
      for (const { value, ms } of results) {
        expect(value).toEqual({ error: 503, message: expect.any(String) });
        expect(ms).toBeLessThan(6_000);
      }
      const health = await timed(() => fetch(`${server.url}/health`));
      expect(health.ms).toBeLessThan(1_500);
      await other.query('ROLLBACK');
      await sleep(500);
      const stored = await other.query('SELECT count(*)::int AS n FROM plant');
      expect(stored.rows[0]).toEqual({ n: 0 });
      expect(await create(server, token, 200)).toEqual({ name: 'locked out' });
    } finally {
      await other.end();
      await stopServer(server);
      await database.drop();
    }
  });
});
