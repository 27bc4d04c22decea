/**
 * @slow 6 s: two servers with two workers each
 */
import { jest } from '@jest/globals';
import type { Socket } from 'node:net';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { answerEnd, createRequest, replyBody } from '../support/raw-http';
import { createToken, startServer, stopServer } from '../support/server-process';
import { open, sleep, timed } from '../support/sockets';

// These tests start real server processes.
jest.setTimeout(60_000);

/**
 * RATE_LIMIT without RATE_LIMIT_REDIS_URL is one count per instance: under WORKERS the primary
 * keeps it for every worker (test/rate-limit-redis.e2e-spec.ts has the fleet's count).
 */
describe('RATE_LIMIT with WORKERS=2 and no Redis', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  /** Sends one request on `socket` and resolves with its whole answer. */
  const exchange = (socket: Socket, request: string): Promise<string> =>
    new Promise((resolve) => {
      let reply = '';
      const onData = (chunk: Buffer): void => {
        reply += chunk.toString('utf8');
        if (answerEnd(reply) !== -1) {
          socket.off('data', onData);
          resolve(reply);
        }
      };
      socket.on('data', onData);
      socket.write(request);
    });

  it('counts every worker in one count: RATE_LIMIT creates a minute for the instance, not for each worker', async () => {
    const token = await createToken(database.url, 'instance-count');
    const server = await startServer({ DATABASE_URL: database.url, WORKERS: '2', RATE_LIMIT: '10' });
    try {
      // A connection each: the kernel spreads new connections over the workers' sockets.
      const replies: string[] = [];
      for (let id = 1; id <= 30; id++)
        replies.push(await exchange(await open(server.port), createRequest(token, id, 'counted', 'close')));
      const statuses = replies.map((reply) => reply.split('\r\n')[0]);
      expect(statuses.filter((status) => status === 'HTTP/1.1 200 OK')).toHaveLength(10);
      const refused = replies.filter((reply) => reply.startsWith('HTTP/1.1 400'));
      expect(refused).toHaveLength(20);
      expect(replyBody(refused[0])).toEqual({
        error: 429,
        message: expect.stringMatching(
          /^Rate limit reached: at most 10 requests per minute per token on this instance /,
        ),
      });
      // Both workers answered (each request's log line names its process).
      await sleep(100);
      const served = server
        .output()
        .split('\n')
        .filter((line) => line.includes('"req":'))
        .map((line) => (JSON.parse(line) as { pid: number }).pid);
      expect(served).toHaveLength(30);
      expect(new Set(served).size).toBe(2);
    } finally {
      await stopServer(server);
    }
  });

  it('lets a request through uncounted, in bounded time, when the primary does not answer, and says so once', async () => {
    const token = await createToken(database.url, 'primary-stopped');
    const server = await startServer({ DATABASE_URL: database.url, WORKERS: '2', RATE_LIMIT: '1000' });
    try {
      const socket = await open(server.port);
      expect((await exchange(socket, createRequest(token, 100, 'counted', 'keep-alive'))).split('\r\n')[0]).toBe(
        'HTTP/1.1 200 OK',
      );
      // Stopped, the primary counts nothing: the worker on this connection must let these through.
      server.child.kill('SIGSTOP');
      try {
        for (const id of [101, 102]) {
          const { value: reply, ms } = await timed(() =>
            exchange(socket, createRequest(token, id, 'counted', 'keep-alive')),
          );
          expect(reply.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
          expect(ms).toBeGreaterThanOrEqual(400);
          expect(ms).toBeLessThan(2_000);
        }
      } finally {
        server.child.kill('SIGCONT');
      }
      expect((await exchange(socket, createRequest(token, 103, 'counted', 'keep-alive'))).split('\r\n')[0]).toBe(
        'HTTP/1.1 200 OK',
      );
      await sleep(100);
      const lines = server.output().split('\n');
      expect(lines.filter((line) => line.includes('the primary did not count'))).toHaveLength(1);
      expect(lines.filter((line) => line.includes('the primary counts again'))).toHaveLength(1);
      socket.destroy();
    } finally {
      await stopServer(server);
    }
  });
});
