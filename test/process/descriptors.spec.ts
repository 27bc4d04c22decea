/**
 * @slow 15 s: 900 connections at once to a server with 1,024 descriptors
 */
import { jest } from '@jest/globals';
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { answerEnd, createRequest, replyBody } from '../support/raw-http';
import { createToken, startServer, stopServer } from '../support/server-process';
import { open, sleep } from '../support/sockets';

jest.setTimeout(60_000);

/** A create on its own connection: the answer's status and Error code, or what the socket saw instead. */
function create(port: number, token: string, id: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('no answer in 20 s');
    }, 20_000);
    const settle = (outcome: string): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    socket.on('error', (error: NodeJS.ErrnoException) => settle(`error ${error.code}`));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('utf8');
      if (answerEnd(reply) === -1) return;
      const status = reply.slice(0, reply.indexOf('\r\n'));
      settle(status.includes(' 200 ') ? '200' : `${status} ${(replyBody(reply) as { error: number }).error}`);
    });
    socket.on('end', () => settle(reply === '' ? 'closed without an answer' : `cut: ${reply.slice(0, 40)}`));
    socket.write(createRequest(token, id, 'budget'));
  });
}

/** `count` connections that send nothing, each open until `close` or until the server answers it. */
async function holdConnections(port: number, count: number): Promise<{ close(): void }> {
  const sockets = await Promise.all(Array.from({ length: count }, () => open(port)));
  for (const socket of sockets) socket.on('data', () => socket.destroy());
  return { close: () => sockets.forEach((socket) => socket.destroy()) };
}

/** The readiness probe's HTTP status, and the Error code when it was answered with one. */
async function readiness(url: string): Promise<string> {
  const response = await fetch(`${url}/health/ready`);
  const body = (await response.json()) as { error?: unknown };
  return typeof body.error === 'number' ? `${response.status} ${body.error}` : String(response.status);
}

describe('a server short of descriptors', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it("with 8,192 descriptors (a container engine's usual setting) says nothing: fewer listening sockets leave room for MAX_IN_FLIGHT", async () => {
    const server = await startServer({ DATABASE_URL: database.url }, 20_000, undefined, 'socket', undefined, [
      'prlimit',
      '--nofile=8192:8192',
    ]);
    try {
      expect(server.output()).not.toContain('"context":"Connections"');
      // An eighth of the limit listens on the port; the rest is the budget for connections.
      const descriptors = readdirSync(`/proc/${server.child.pid}/fd`).length;
      expect(descriptors).toBeGreaterThanOrEqual(1_024);
      expect(descriptors).toBeLessThan(1_024 + 128);
    } finally {
      await stopServer(server);
    }
  });

  it.each([
    [1_024, 0, 900],
    // Past the budget (256 - 32 listeners - 128 reserved) but within its headroom for refusals.
    [256, 100, 40],
  ])(
    'with %i descriptors and %i idle connections, says at start what to raise and answers every one of %i simultaneous creates (200 or 503)',
    async (limit, idle, clients) => {
      const token = await createToken(database.url, `budget-${limit}`);
      const server = await startServer({ DATABASE_URL: database.url }, 20_000, undefined, 'socket', undefined, [
        'prlimit',
        `--nofile=${limit}:${limit}`,
      ]);
      try {
        const warning = server
          .output()
          .split('\n')
          .find((line) => line.includes('"context":"Connections"'));
        expect(warning).toContain(
          `the descriptor limit is ${limit}, below the 8320 that MAX_IN_FLIGHT=4096 needs: raise it`,
        );
        const holders = await holdConnections(server.port, idle);
        await sleep(300);
        if (idle > 0) expect(await readiness(server.url)).toBe('400 503');

        // Stopped, the server lets the kernel queue every connection: they all arrive at once.
        server.child.kill('SIGSTOP');
        const answers = Array.from({ length: clients }, (_, i) => create(server.port, token, limit * 1000 + i));
        await sleep(1_000);
        server.child.kill('SIGCONT');
        const outcomes = await Promise.all(answers);
        const tally: Record<string, number> = {};
        for (const outcome of outcomes) tally[outcome] = (tally[outcome] ?? 0) + 1;
        expect(Object.keys(tally).filter((outcome) => outcome !== '200' && !outcome.endsWith(' 503'))).toEqual([]);
        expect(tally[idle > 0 ? 'HTTP/1.1 400 Bad Request 503' : '200']).toBeGreaterThan(0);

        holders.close();
        if (idle > 0) {
          await sleep(1_500);
          expect(server.output()).toContain('as many as the descriptor limit allows');
          expect(server.output()).toMatch(/back under the connection budget; \d+ connections were refused/);
          expect(await readiness(server.url)).toBe('200');
        }
      } finally {
        server.child.kill('SIGCONT');
        await stopServer(server);
      }
    },
  );
});
