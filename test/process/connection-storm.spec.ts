/**
 * @slow 16 s: three thousand connections at once, to one process and to two workers
 */
import { jest } from '@jest/globals';
import { connect } from 'node:net';
import { listenOverflows } from '../../scripts/listen-overflows.mjs';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { createRequest } from '../support/raw-http';
import { createToken, startServer, stopServer, waitForWorkers, workerPids } from '../support/server-process';

jest.setTimeout(60_000);

const STORM = 3_000;

/**
 * A fleet's clients reconnecting together (a rolling restart, an instance back): thousands of
 * connections arrive while the process is busy. A stopped process stands for the busy event
 * loop: the kernel completes the connections and queues them, and the process accepts none until
 * it runs again. With one listening socket its queue (511) overflows and the rest wait for SYN
 * retries (1 s, 3 s, 7 s…); with the public port's several sockets every one is queued, and each
 * first request is answered as soon as the process runs.
 */
describe('a connection storm', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  // Under WORKERS each worker listens with sockets of its own: through Node's cluster the
  // primary's one socket would take every connection, and overflow.
  it.each([1, 2])(
    `queues ${STORM} connections made at once without a listen overflow and answers each first request promptly (WORKERS=%i)`,
    async (workers) => {
      const token = await createToken(database.url, `storm-${workers}`);
      const server = await startServer({
        DATABASE_URL: database.url,
        MAX_IN_FLIGHT: String(2 * STORM),
        WORKERS: String(workers),
      });
      let stopped = [server.child.pid!];
      const signal = (name: NodeJS.Signals): void => stopped.forEach((pid) => process.kill(pid, name));
      try {
        if (workers > 1) {
          expect(await waitForWorkers(server, workers)).toBe(workers);
          stopped = [server.child.pid!, ...workerPids(server)];
        }
        signal('SIGSTOP');
        const before = listenOverflows();
        let resumedAt = 0;
        const answers = Array.from({ length: STORM }, (_, i) => {
          return new Promise<{ status: string; ms: number }>((resolve) => {
            const socket = connect(server.port, '127.0.0.1');
            let reply = '';
            socket.on('error', () => resolve({ status: 'error', ms: Date.now() - resumedAt }));
            socket.on('data', (chunk: Buffer) => {
              reply += chunk.toString('utf8');
              if (reply.includes('\r\n\r\n')) {
                resolve({ status: reply.slice(0, reply.indexOf('\r\n')), ms: Date.now() - resumedAt });
                socket.destroy();
              }
            });
            socket.write(createRequest(token, workers * STORM + i, 'storm', 'close'));
          });
        });
        // Long enough for every handshake to reach the kernel's queues.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const overflows = listenOverflows() - before;
        resumedAt = Date.now();
        signal('SIGCONT');
        const outcomes = await Promise.all(answers);
        expect(overflows).toBe(0);
        expect(outcomes.filter((outcome) => outcome.status !== 'HTTP/1.1 200 OK')).toEqual([]);
        // Every connection was queued (no overflow, so no SYN retry). The last answer waits for
        // the creates before it, which a busy machine may take seconds to commit: how fast is
        // `npm run bench`'s to say (storm-3000), so this bound only rules out a lost connection
        // left to a client's retries.
        expect(Math.max(...outcomes.map((outcome) => outcome.ms))).toBeLessThan(15_000);
      } finally {
        signal('SIGCONT');
        await stopServer(server);
      }
    },
  );
});
