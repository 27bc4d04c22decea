/**
 * @slow 12 s: starts a server for each of its cases
 */
import { connect } from 'node:net';
import Database from 'better-sqlite3';
import { freshDatabase, testStoreKind, type TestDatabase } from '../support/databases';
import { answerEnd, createRequest, replyBody } from '../support/raw-http';
import { createToken, startServer } from '../support/server-process';
import { open, sleep } from '../support/sockets';

/**
 * SIGTERM: readiness fails at once; SHUTDOWN_DELAY later the drain refuses new requests (503,
 * `Connection: close`), finishes those in flight, closes the store and exits 0. Past its 10 s
 * deadline it would exit 1, so an exit 0 says the drain was not held.
 */
describe('graceful shutdown', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(() => database.drop());

  it.each(['nothing', 'half its headers', 'half a body, then its FIN', 'half a body, then a reset'])(
    'is not held by a connection that sent %s: exit 0 (SIGINT alike), the drain logged last',
    async (what) => {
      const token = await createToken(database.url, `idle-${what.replace(/\W/g, '-')}`);
      const server = await startServer({ DATABASE_URL: database.url });
      const socket = await open(server.port);
      socket.on('error', () => undefined);
      const body = `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":`;
      if (what === 'half its headers') socket.write(body.slice(0, 40));
      if (what.startsWith('half a body')) socket.write(body);
      await sleep(100);
      if (what.endsWith('FIN')) socket.end();
      if (what.endsWith('reset')) socket.resetAndDestroy();
      server.child.kill(what === 'nothing' ? 'SIGINT' : 'SIGTERM');
      expect(await server.exited).toBe(0);
      socket.destroy();
      const last = JSON.parse(server.output().trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(last.msg).toMatch(/^stopped: drained and closed the store/);
      expect(last.drainMs).toEqual(expect.any(Number));
    },
  );

  /** One kept-alive connection sending creates back to back until the server closes it. */
  let answered = 0;
  function keepCreating(port: number, token: string, firstId: number) {
    return new Promise<{ answers: number[]; created: number[]; error?: string; unanswered: boolean }>((resolve) => {
      const client = { answers: [] as number[], created: [] as number[], error: undefined as string | undefined };
      const socket = connect(port, '127.0.0.1');
      let id = firstId;
      let pending = '';
      let outstanding = false;
      const send = (): void => {
        outstanding = true;
        socket.write(createRequest(token, id, 'drained'));
      };
      socket.on('connect', send);
      socket.on('data', (chunk: Buffer) => {
        pending += chunk.toString('latin1');
        const end = answerEnd(pending);
        if (end === -1) return;
        const answer = pending.slice(0, end);
        pending = pending.slice(end);
        outstanding = false;
        const code = answer.startsWith('HTTP/1.1 200') ? 200 : (replyBody(answer) as { error: number }).error;
        client.answers.push(code);
        answered++;
        if (code === 200) client.created.push(id);
        id++;
        if (!/\r\nconnection: close/i.test(answer)) send();
      });
      socket.on('error', (error: NodeJS.ErrnoException) => (client.error = error.code ?? error.message));
      socket.on('close', () => resolve({ ...client, unanswered: outstanding }));
    });
  }

  it('answers every request on 32 kept-alive connections, 200 or 503, stores every 200, resets none', async () => {
    const token = await createToken(database.url, 'drain-under-load');
    const server = await startServer({ DATABASE_URL: database.url });
    const clients = Array.from({ length: 32 }, (_, i) => keepCreating(server.port, token, 1_000_000 * (i + 1)));
    while (answered < 64) await sleep(10);
    server.child.kill('SIGTERM');
    const results = await Promise.all(clients);
    expect(await server.exited).toBe(0);
    const answers = results.flatMap((client) => client.answers);
    expect(answers.filter((code) => code === 200).length).toBeGreaterThan(32);
    expect(answers.filter((code) => code !== 200 && code !== 503)).toEqual([]);
    expect(results.filter((client) => client.error !== undefined || client.unanswered)).toEqual([]);
    if (testStoreKind() === 'sqlite') {
      const db = new Database(database.url.slice('sqlite:'.length), { readonly: true });
      const stored = db.prepare('SELECT 1 FROM plant WHERE id = ?');
      const missing = results.flatMap((client) => client.created).filter((id) => stored.get(id) === undefined);
      db.close();
      expect(missing).toEqual([]);
    }
  });

  it('with SHUTDOWN_DELAY: not ready at once, serving for the delay, then 503 on a kept-alive connection, exit 0', async () => {
    const token = await createToken(database.url, 'delayed');
    const server = await startServer({ DATABASE_URL: database.url, SHUTDOWN_DELAY: '1' });
    const keptAlive = await open(server.port);
    let received = '';
    keptAlive.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const create = async (id: number): Promise<string> => {
      received = '';
      keptAlive.write(createRequest(token, id, 'delayed'));
      while (answerEnd(received) === -1) await sleep(5);
      return received;
    };
    server.child.kill('SIGTERM');
    while (!server.output().includes('SIGTERM: not ready')) await sleep(5);
    expect((await fetch(`${server.url}/health/ready`)).status).toBe(503);
    expect((await fetch(`${server.url}/health`)).status).toBe(503);
    expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
    expect(await create(1)).toMatch(/^HTTP\/1\.1 200 /);
    while (!server.output().includes('finishing requests in flight')) await sleep(5);
    const refused = await create(2);
    expect(refused).toMatch(/\r\nconnection: close\r\n/i);
    expect(replyBody(refused)).toEqual({ error: 503, message: 'The server is shutting down; try again' });
    expect(await server.exited).toBe(0);
  });

  (testStoreKind() === 'sqlite' ? it : it.skip)(
    'finishes a create in flight, its answer closing the connection, and exits 0',
    async () => {
      const token = await createToken(database.url, 'in-flight');
      const server = await startServer({ DATABASE_URL: database.url });
      // A create held in flight by another process's write lock keeps the drain open.
      const other = new Database(database.url.slice('sqlite:'.length));
      try {
        other.exec('BEGIN IMMEDIATE');
        const held = fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: '{"id": 77, "name": "in flight"}',
        });
        await sleep(1_000); // on its way to the lock: nothing outside the server can see it wait
        server.child.kill('SIGTERM');
        while (!server.output().includes('finishing requests in flight')) await sleep(5);
        const probe = await open(server.port).catch(() => undefined);
        probe?.destroy(); // the port may already be closed: no new connections during a drain
        other.exec('ROLLBACK');
        const answer = await held;
        expect(await answer.json()).toEqual({ name: 'in flight' });
        expect(answer.headers.get('connection')).toBe('close');
        expect(await server.exited).toBe(0);
      } finally {
        other.close();
      }
      const db = new Database(database.url.slice('sqlite:'.length), { readonly: true });
      expect(db.prepare('SELECT name FROM plant WHERE id = 77').get()).toEqual({ name: 'in flight' });
      db.close();
    },
  );
});
