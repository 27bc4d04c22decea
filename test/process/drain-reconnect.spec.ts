/**
 * @slow 15 s: three drains under 32 clients that reconnect after every answer
 */
import { jest } from '@jest/globals';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { answerEnd, createRequest } from '../support/raw-http';
import { createToken, startServer } from '../support/server-process';
import { sleep } from '../support/sockets';
import { run } from '../support/spawn';

jest.setTimeout(90_000);

/** One create on a new connection: its answer's status line, 'refused' (the port is closed), or 'lost'. */
function createOnce(port: number, token: string, id: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    let connected = false;
    socket.on('connect', () => {
      connected = true;
      socket.write(createRequest(token, id, 'reconnecting', 'close'));
    });
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('latin1');
      if (answerEnd(reply) !== -1) {
        socket.destroy();
        resolve(reply.slice(0, reply.indexOf('\r\n')) + (reply.includes('"error":503') ? ' 503' : ''));
      }
    });
    socket.on('error', () => resolve(connected ? 'lost' : 'refused'));
    socket.on('close', () => resolve(connected ? 'lost' : 'refused'));
  });
}

/**
 * A drain while clients reconnect as fast as they are answered. Every connection the process
 * accepted is answered, 200 or 503. One the kernel completed in the last moment, which the
 * process never accepted, is reset by the kernel when the listening sockets close (Linux resets
 * what waits in a closing socket's queue, and Node cannot stop the kernel completing new ones
 * first): its request was never read, so nothing of it is stored and a retry is safe.
 */
describe('a drain under clients that reconnect after every answer', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it('answers every request it read (200 or 503), exits 0, and stores nothing of a connection it never accepted', async () => {
    const token = await createToken(database.url, 'reconnecting');
    const lost: number[] = [];
    const answers: Record<string, number> = {};
    for (let drain = 1; drain <= 3; drain++) {
      const server = await startServer({ DATABASE_URL: database.url, SHUTDOWN_DELAY: '1' });
      const clients = Array.from({ length: 32 }, async (_, client) => {
        for (let id = drain * 10_000_000 + client * 100_000; ; id++) {
          const outcome = await createOnce(server.port, token, id);
          if (outcome === 'refused') return;
          if (outcome === 'lost') lost.push(id);
          else answers[outcome] = (answers[outcome] ?? 0) + 1;
        }
      });
      await sleep(500);
      server.child.kill('SIGTERM');
      await Promise.all(clients);
      expect(await server.exited).toBe(0);
    }
    expect(Object.keys(answers).sort()).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 400 Bad Request 503']);
    const stored = await run(process.execPath, [join(process.cwd(), 'dist/cli/plants.js'), 'export'], {
      DATABASE_URL: database.url,
    });
    const storedIds = new Set([...stored.stdout.matchAll(/^\{"id":(\d+),/gm)].map(([, id]) => Number(id)));
    expect(storedIds.size).toBe(answers['HTTP/1.1 200 OK']);
    expect(lost.filter((id) => storedIds.has(id))).toEqual([]);
  });
});
