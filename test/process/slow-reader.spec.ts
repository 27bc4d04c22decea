/**
 * @slow 35 s: waits out the 30 s response deadline
 */
import { jest } from '@jest/globals';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { type ServerProcess, startServer, stopServer } from '../support/server-process';
import { open, sleep } from '../support/sockets';

jest.setTimeout(60_000);

describe('a client that stops reading', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  beforeAll(async () => {
    database = await freshDatabase();
    server = await startServer({ DATABASE_URL: database.url });
  });
  afterAll(async () => {
    await stopServer(server);
    await database.drop();
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
