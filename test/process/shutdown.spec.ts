/**
 * @slow 16 s: starts a server for each of its cases
 */
import { jest } from '@jest/globals';
import { connect } from 'node:net';
import Database from 'better-sqlite3';
import { freshDatabase, testStoreKind, type TestDatabase } from '../support/databases';
import { createToken, startServer } from '../support/server-process';
import { answerEnd, createRequest, rawRequest, replyBody } from '../support/raw-http';
import { open, sleep, timed } from '../support/sockets';
import { DRAIN_IDLE_GRACE_MS } from '../../src/edge/drain';
import { LINGER_MS } from '../../src/edge/node-sockets';
import { ACCEPT_BACKLOG_MS } from '../../src/shutdown';

jest.setTimeout(60_000);

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
      // Far inside the shutdown's 10 s deadline. On a busy machine the process may accept the
      // connection only as its listeners close: answered 503 by the drain, and lingered on.
      expect(ms).toBeLessThan(ACCEPT_BACKLOG_MS + DRAIN_IDLE_GRACE_MS + LINGER_MS + 1_000);
      const last = JSON.parse(server.output().trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(last.msg).toMatch(/^stopped/);
      expect(last.drainMs).toEqual(expect.any(Number));
    },
  );
});

describe('graceful shutdown under load', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  interface Client {
    answers: number[];
    /** A socket error (ECONNRESET: a request already sent was lost to a reset). */
    error?: string;
    /** Requests sent that got no answer before the server closed the connection. */
    unanswered: number;
  }

  /** One kept-alive connection sending creates back to back until the server closes it. */
  function keepCreating(port: number, token: string, firstId: number): Promise<Client> {
    return new Promise((resolve) => {
      const client: Client = { answers: [], unanswered: 0 };
      const socket = connect(port, '127.0.0.1');
      let id = firstId;
      let pending = Buffer.alloc(0);
      let outstanding = false;
      const send = (): void => {
        outstanding = true;
        socket.write(createRequest(token, id++, 'drained'));
      };
      socket.on('connect', send);
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        for (;;) {
          const text = pending.toString('latin1');
          const end = answerEnd(text);
          if (end === -1) return;
          const headEnd = text.indexOf('\r\n\r\n');
          const head = text.slice(0, headEnd);
          const body = text.slice(headEnd + 4, end);
          pending = pending.subarray(end);
          outstanding = false;
          client.answers.push(head.startsWith('HTTP/1.1 200') ? 200 : (JSON.parse(body) as { error: number }).error);
          if (/\r\nconnection: close/i.test(head)) return;
          send();
        }
      });
      socket.on('error', (error: NodeJS.ErrnoException) => (client.error = error.code ?? error.message));
      socket.on('close', () => {
        if (outstanding) client.unanswered++;
        resolve(client);
      });
    });
  }

  it('answers every request on 32 kept-alive connections, 200 or 503, and resets none', async () => {
    const token = await createToken(database.url, 'drain-under-load');
    const server = await startServer({ DATABASE_URL: database.url });
    const clients = Array.from({ length: 32 }, (_, i) => keepCreating(server.port, token, 1_000_000 * (i + 1)));
    await sleep(1_000);
    server.child.kill('SIGTERM');
    const results = await Promise.all(clients);
    expect(await server.exited).toBe(0);
    const answers = results.flatMap((client) => client.answers);
    expect(answers.filter((code) => code === 200).length).toBeGreaterThan(32);
    expect(answers.filter((code) => code !== 200 && code !== 503)).toEqual([]);
    expect(results.map((client) => client.error).filter((error) => error !== undefined)).toEqual([]);
    expect(results.reduce((sum, client) => sum + client.unanswered, 0)).toBe(0);
  });

  it('answers 503 with Connection: close to a request sent on a kept-alive connection once the drain has begun', async () => {
    const token = await createToken(database.url, 'drain-kept-alive');
    const server = await startServer({ DATABASE_URL: database.url });
    // Each connection: one create answered and kept alive, then, once the drain has begun, one more.
    const connections = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const socket = await open(server.port);
        const received: Buffer[] = [];
        const closed = new Promise<string | undefined>((resolve) => {
          let error: string | undefined;
          socket.on('error', (failure: NodeJS.ErrnoException) => (error = failure.code));
          socket.on('close', () => resolve(error));
        });
        socket.on('data', (chunk: Buffer) => received.push(chunk));
        socket.write(createRequest(token, 2_000 + i, 'kept'));
        while (!Buffer.concat(received).includes('"name":"kept"}')) await sleep(10);
        received.length = 0;
        return { socket, received, closed, id: 3_000 + i };
      }),
    );
    server.child.kill('SIGTERM');
    while (!server.output().includes('finishing requests in flight')) await sleep(5);
    for (const { socket, id } of connections) socket.write(createRequest(token, id, 'kept'));
    const outcomes = await Promise.all(
      connections.map(async ({ received, closed }) => {
        const error = await closed;
        const reply = Buffer.concat(received).toString('utf8');
        return { error, status: reply.split('\r\n')[0], close: /\r\nconnection: close\r\n/i.test(reply), reply };
      }),
    );
    expect(await server.exited).toBe(0);
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({ error: undefined, status: 'HTTP/1.1 400 Bad Request', close: true });
      expect(replyBody(outcome.reply)).toMatchObject({ error: 503 });
    }
  });

  it('accepts the connections still waiting in the kernel when it begins, answers each and resets none', async () => {
    const token = await createToken(database.url, 'drain-backlog');
    // Whether the signal is handled before the first of these requests is read is up to the
    // kernel's scheduling on a busy machine (all answered 200 then: the drain came too late to be
    // tested); so the scenario runs again, up to six times, until the drain refuses some.
    for (let attempt = 1; attempt <= 6; attempt++) {
      const answers = await signalWithConnectionsWaiting(token);
      expect(answers.filter((answer) => answer !== 200 && answer !== 503)).toEqual([]);
      if (answers.includes(503)) return;
    }
    throw new Error('in six attempts the drain never began before the waiting requests were read');
  });

  /** The answers to 16 creates queued in the kernel while the process is stopped and signalled. */
  async function signalWithConnectionsWaiting(token: string): Promise<(number | 'reset')[]> {
    const server = await startServer({ DATABASE_URL: database.url });
    // A stopped process stands for a busy event loop: the kernel completes these connections and
    // holds their requests, and the process has accepted none of them when the signal is handled.
    server.child.kill('SIGSTOP');
    const body = '{"id":7,"name":"waiting"}';
    const replies = Array.from({ length: 16 }, () =>
      rawRequest(
        server.port,
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        15_000,
      ),
    );
    await sleep(500);
    server.child.kill('SIGTERM');
    server.child.kill('SIGCONT');
    // Answered 200 if its request began before the signal was seen, else 503; a reset is empty.
    const answers = (await Promise.all(replies)).map((reply) =>
      reply === '' ? 'reset' : reply.startsWith('HTTP/1.1 200') ? 200 : (replyBody(reply) as { error: number }).error,
    );
    expect(await server.exited).toBe(0);
    return answers;
  }
});

/**
 * What an orchestrator sees: readiness fails the moment SIGTERM arrives while the port goes on
 * serving for SHUTDOWN_DELAY (a balancer probing every few seconds stops routing here before
 * anything is refused); `/health` says HTTP 503 from then to the end; and nothing a client left
 * behind can hold the drain.
 */
describe('graceful shutdown as orchestrators see it', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  const createOn = (url: string, token: string, id: number) =>
    fetch(`${url}/plants`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Connection: 'close' },
      body: JSON.stringify({ id, name: 'rolling' }),
    });

  it('with SHUTDOWN_DELAY: not ready at once, serving normally (new connections too) for the delay, then drained, exit 0', async () => {
    const token = await createToken(database.url, 'delayed');
    const server = await startServer({ DATABASE_URL: database.url, SHUTDOWN_DELAY: '1.5' });
    // A connection kept alive from before the signal, to send a create on once the drain begins.
    const keptAlive = await open(server.port);
    const received: Buffer[] = [];
    keptAlive.on('data', (chunk: Buffer) => received.push(chunk));
    const signalled = Date.now();
    server.child.kill('SIGTERM');
    while (!server.output().includes('SIGTERM: not ready')) await sleep(5);
    expect((await fetch(`${server.url}/health/ready`)).status).toBe(503);
    expect((await fetch(`${server.url}/health`)).status).toBe(503);
    expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
    const during: number[] = [];
    while (Date.now() - signalled < 1_200) {
      during.push((await createOn(server.url, token, 10_000 + during.length)).status);
      await sleep(100);
    }
    expect(during.length).toBeGreaterThan(5);
    expect(during.every((status) => status === 200)).toBe(true);
    // The log says the drain has begun only once it has: a create sent after reading it is refused.
    keptAlive.write(createRequest(token, 19_999, 'rolling'));
    while (!Buffer.concat(received).includes('"name":"rolling"}')) await sleep(10);
    received.length = 0;
    while (!server.output().includes('finishing requests in flight')) await sleep(5);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(1_500);
    keptAlive.write(createRequest(token, 20_000, 'rolling'));
    await new Promise((resolve) => keptAlive.once('close', resolve));
    const refused = Buffer.concat(received).toString('utf8');
    expect(refused.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(replyBody(refused)).toMatchObject({ error: 503 });
    const { value: code, ms } = await timed(() => server.exited);
    expect(code).toBe(0);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(1_500);
    expect(ms).toBeLessThan(3_000);
  });

  (testStoreKind() === 'sqlite' ? it : it.skip)(
    'answers /health with HTTP 503 during the drain, not only readiness',
    async () => {
      const dir = database.url.replace(/^sqlite:/, '').replace(/\/[^/]+$/, '');
      const file = `${dir}/drain-health.sqlite`;
      const url = `sqlite:${file}`;
      const token = await createToken(url, 'drain-health');
      const server = await startServer({ DATABASE_URL: url });
      // A create held in flight by another process's write lock keeps the drain open.
      const other = new Database(file);
      try {
        other.exec('BEGIN IMMEDIATE');
        const held = createOn(server.url, token, 1);
        await sleep(200);
        server.child.kill('SIGTERM');
        while (!server.output().includes('finishing requests in flight')) await sleep(5);
        const health = await fetch(`${server.url}/health`);
        expect(health.status).toBe(503);
        expect((await fetch(`${server.url}/health/ready`)).status).toBe(503);
        expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
        other.exec('ROLLBACK');
        expect((await held).status).toBe(200);
        expect(await server.exited).toBe(0);
      } finally {
        other.close();
      }
    },
  );

  it.each(['ended its side', 'closed the connection'])(
    'is not held by a client that sent half a body and %s: exit 0 at once',
    async (how) => {
      const token = await createToken(database.url, `half-${how.length}`);
      const server = await startServer({ DATABASE_URL: database.url });
      const socket = await open(server.port);
      socket.write(
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":',
      );
      await sleep(100);
      if (how === 'ended its side') socket.end();
      else socket.destroy();
      await sleep(100);
      const { value: code, ms } = await timed(() => {
        server.child.kill('SIGTERM');
        return server.exited;
      });
      expect(code).toBe(0);
      // Far inside the shutdown's 10 s deadline. On a busy machine the process may accept the
      // connection only as its listeners close: answered 503 by the drain, and lingered on.
      expect(ms).toBeLessThan(ACCEPT_BACKLOG_MS + DRAIN_IDLE_GRACE_MS + LINGER_MS + 1_000);
    },
  );
});
