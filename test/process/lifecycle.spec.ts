/**
 * @slow 11 s: starts and stops servers, one with two workers
 */
import { jest } from '@jest/globals';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { testStoreKind } from '../support/databases';
import { createToken, startServer, stopServer, waitForWorkers, workerPids } from '../support/server-process';

// These tests start real server processes.
jest.setTimeout(60_000);

// These read the SQLite file directly; under `npm run test:postgres` they have nothing to add.
const describeOnSqlite = testStoreKind() === 'sqlite' ? describe : describe.skip;

describeOnSqlite('the server process', () => {
  let dir: string;
  let databaseUrl: string;
  let dbPath: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-proc-'));
    dbPath = join(dir, 'nested', 'store.sqlite');
    databaseUrl = `sqlite:${dbPath}`;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates the SQLite folder, answers, and logs JSON lines without the token', async () => {
    const token = await createToken(databaseUrl, 'lifecycle');
    const server = await startServer({ DATABASE_URL: databaseUrl });
    try {
      const response = await fetch(`${server.url}/plants?access_token=${token}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: '{"id": 1, "name": "first"}',
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: 'first' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const lines = server.output().trim().split('\n');
      for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
      const requestLog = lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((entry) => entry.req !== undefined);
      expect(requestLog).toMatchObject({
        req: { method: 'POST', path: '/plants' },
        res: { status: 200 },
        requestId: response.headers.get('x-request-id'),
        durationMs: expect.any(Number),
      });
      expect(server.output()).not.toContain(token);
      expect(server.output()).not.toContain(token.slice(4));
      expect(server.output()).not.toMatch(/authorization/i);
    } finally {
      await stopServer(server);
    }
  });

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'on %s finishes the create in flight, refuses new requests with 503 meanwhile, closes the store and exits 0',
    async (signal) => {
      const token = await createToken(databaseUrl, `shutdown-${signal}`);
      const server = await startServer({ DATABASE_URL: databaseUrl });
      const id = signal === 'SIGTERM' ? 1001 : 1002;
      const body = Buffer.from(`{"id": ${id}, "name": "in flight"}`);
      const socket = connect(server.port, '127.0.0.1');
      let reply = '';
      socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
      const closed = new Promise((resolve) => socket.on('close', resolve));
      await new Promise((resolve) => socket.on('connect', resolve));
      // Headers and half the body: the request is in flight when the signal arrives.
      socket.write(
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n`,
      );
      socket.write(body.subarray(0, 10));
      await new Promise((resolve) => setTimeout(resolve, 200));
      server.child.kill(signal);
      await new Promise((resolve) => setTimeout(resolve, 300));

      // The port stays open while the create is in flight, but serves nothing new.
      const late = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: `{"id": ${id + 10}, "name": "too late"}`,
      });
      expect(late.headers.get('connection')).toBe('close');
      expect(await late.json()).toEqual({ error: 503, message: 'The server is shutting down; try again' });

      socket.end(body.subarray(10));
      await closed;
      expect(reply).toMatch(/^HTTP\/1\.1 200 OK/);
      expect(reply).toContain('{"name":"in flight"}');
      expect(await server.exited).toBe(0);

      const db = new Database(dbPath, { readonly: true });
      try {
        expect(db.prepare('SELECT name FROM plant WHERE id = ?').get(id)).toEqual({ name: 'in flight' });
        expect(db.prepare('SELECT name FROM plant WHERE id = ?').get(id + 10)).toBeUndefined();
      } finally {
        db.close();
      }
    },
  );

  it('with WORKERS=2 serves from two processes, replaces a worker that dies, and drains both on SIGTERM', async () => {
    const token = await createToken(databaseUrl, 'cluster');
    const server = await startServer({ DATABASE_URL: databaseUrl, WORKERS: '2' });
    const create = (id: number) =>
      fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Connection: 'close' },
        body: `{"id": ${id}, "name": "clustered"}`,
      });
    expect(await waitForWorkers(server, 2)).toBe(2);
    for (let id = 2000; id < 2010; id++) expect((await create(id)).status).toBe(200);

    process.kill(workerPids(server)[0], 'SIGKILL');
    expect(await waitForWorkers(server, 3)).toBe(3); // a third worker took the dead one's place
    for (let id = 2010; id < 2020; id++) expect((await create(id)).status).toBe(200);

    // The primary exits as soon as its last line is written, nothing left to hold it.
    let lastLineAt = 0;
    server.stdout.on('data', () => {
      if (lastLineAt === 0 && server.output().includes('stopped: every worker has exited')) lastLineAt = Date.now();
    });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const exitedAt = Date.now();
    // A child's exit can be reported before the last of what it wrote has been read.
    if (!server.stdout.readableEnded) await once(server.stdout, 'end');
    expect(lastLineAt).toBeGreaterThan(0);
    expect(exitedAt - lastLineAt).toBeLessThan(1_000);
    // The primary says it listens once, not again for the replacement, and ends with a line of its own.
    expect(server.output().match(/with 2 workers/g)).toHaveLength(1);
    expect(server.output()).toMatch(/worker \d+ serving in place of the one that exited/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const last = JSON.parse(server.output().trim().split('\n').at(-1)!) as { msg: string };
    expect(last.msg).toBe('stopped: every worker has exited (exit 0)');
  });
});
