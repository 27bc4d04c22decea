/**
 * @slow 22 s: waits out the 10 s idle timeout and the 20 s request deadline
 */
import { jest } from '@jest/globals';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { replyBody } from '../support/raw-http';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { open, sleep, timed } from '../support/sockets';

jest.setTimeout(60_000);

describe('a client whose body stalls', () => {
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

  /** A create promising 100 bytes of body, of which it sends `sent`; what comes back, and when the server closes. */
  async function promiseABody(sent: string) {
    const socket = await open(server.port);
    const exchange = { socket, reply: '', closed: new Promise((resolve) => socket.on('close', resolve)) };
    socket.on('data', (chunk: Buffer) => (exchange.reply += chunk.toString()));
    socket.write(
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: 100\r\n\r\n${sent}`,
    );
    return exchange;
  }

  it('answers a body that stalls with the Error body and a log line, then closes', async () => {
    const exchange = await promiseABody('{"id": 1');
    const { ms } = await timed(() => exchange.closed);
    const reply = exchange.reply;
    expect(ms).toBeLessThan(25_000);
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(replyBody(reply)).toEqual({ error: 400, message: expect.stringMatching(/timed out/) });
    expect(reply).toMatch(/\r\nX-Request-Id: \S+\r\n/i);
    const requestId = /\r\nX-Request-Id: (\S+)\r\n/i.exec(reply)![1];
    await sleep(100);
    expect(server.output()).toContain(`"requestId":"${requestId}"`);
  });

  it('answers a body dribbled a byte a second (the idle timeout never fires) when the 20 s request deadline passes', async () => {
    const exchange = await promiseABody('');
    const { socket } = exchange;
    const dribble = setInterval(() => socket.writable && socket.write(' '), 1_000);
    try {
      const { ms } = await timed(() => exchange.closed);
      expect(ms).toBeGreaterThan(19_000);
      expect(ms).toBeLessThan(23_000);
    } finally {
      clearInterval(dribble);
    }
    expect(exchange.reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(replyBody(exchange.reply)).toEqual({
      error: 400,
      message: expect.stringMatching(/whole request within 20 s/),
    });
  });
});
