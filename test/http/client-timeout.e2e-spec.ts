import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import Database from 'better-sqlite3';
import { testStoreKind } from '../support/databases';
import { answers, createRequest, replyBody } from '../support/raw-http';
import { requestOnce, sleep } from '../support/sockets';
import { listeningTestApp, startTestApp, type TestApp } from '../support/app';
import { ClientLimits } from '../../src/http/http-server';

/**
 * What a slow client costs is bounded by Node's own deadlines (here scaled down from production's
 * 10 s, 20 s and 12 s): the header block, the whole request, and a connection on which
 * nothing moves. A request that arrived whole and waits for its answer is never cut off.
 */
/** Production's deadlines over 20, in the same proportions: nothing moving outlasts the header deadline. */
const { idleMs, headersMs } = new ClientLimits();
const SCALED = { headersMs: 500, requestMs: 1_000, idleMs: (500 * idleMs) / headersMs };

describe('client deadlines', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp({}, { limits: SCALED });
    port = await t.listen();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    expect((await requestOnce(port, '/health')).status).toBe(200);
  });

  /** A connection whose bytes and close the test watches, and the moment the server lets go of it. */
  function watch(): { socket: Socket; text: () => string; closed: Promise<number>; serverLetGo: Promise<unknown> } {
    const accepted = once(t.server, 'connection') as Promise<[Socket]>;
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.on('error', () => undefined);
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - started)));
    const serverLetGo = accepted.then(([ours]) => once(ours, 'close'));
    return { socket, text: () => text, closed, serverLetGo };
  }

  const bundleBytes = async (): Promise<number> =>
    Number((await requestOnce(port, '/docs/swagger-ui-bundle.js', 'HEAD')).headers['content-length']);

  const bundleRequest = 'GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n';

  const bodyPromised = (length: number): string =>
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${length}\r\n\r\n`;

  it('answers headers dribbled past their deadline with 400, then closes', async () => {
    const { socket, text, closed } = watch();
    let line = 0;
    const dribble = setInterval(() => socket.writable && socket.write(`X-Slow-${line++}: y\r\n`), 100);
    socket.write('POST /plants HTTP/1.1\r\n');
    const ms = await closed;
    clearInterval(dribble);
    expect(ms).toBeGreaterThanOrEqual(450);
    expect(replyBody(text())).toEqual({ error: 400, message: expect.stringMatching(/^Request timed out/) });
  });

  it('answers a request line followed by silence with 400 at the header deadline, then closes', async () => {
    const { socket, text, closed } = watch();
    socket.write('GET /\r\n');
    expect(await closed).toBeGreaterThanOrEqual(450);
    expect(replyBody(text())).toEqual({ error: 400, message: expect.stringMatching(/^Request timed out/) });
    expect(text()).toMatch(/\r\nX-Request-Id: \S+/i);
  });

  it('answers a request whose body stops arriving with 400 once nothing moves, then closes', async () => {
    const { socket, text, closed } = watch();
    socket.write(`${bodyPromised(100)}{"id": 1`);
    expect(await closed).toBeGreaterThanOrEqual(SCALED.idleMs - 50);
    expect(replyBody(text())).toEqual({ error: 400, message: expect.stringMatching(/^Request timed out/) });
  });

  it('answers a body dribbled past the request deadline with 400, then closes', async () => {
    const { socket, text, closed } = watch();
    socket.write(bodyPromised(100));
    const dribble = setInterval(() => socket.writable && socket.write(' '), 100);
    const ms = await closed;
    clearInterval(dribble);
    expect(ms).toBeGreaterThanOrEqual(SCALED.requestMs - 50);
    expect(replyBody(text())).toEqual({ error: 400, message: expect.stringMatching(/^Request timed out/) });
    expect(text()).toMatch(/\r\nConnection: close\r\n/i);
  });

  it('disconnects a client that stops reading its answers', async () => {
    const { socket, closed, serverLetGo } = watch();
    let received = 0;
    socket.pause(); // never reads: the server's writes back up
    socket.write(bundleRequest.repeat(20)); // ~30 MB
    await serverLetGo;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.resume();
    await closed;
    const bundle = await bundleBytes();
    expect(bundle).toBeGreaterThan(100_000);
    expect(received).toBeLessThan(20 * bundle);
  });

  (testStoreKind() === 'sqlite' ? it : it.skip)(
    'disconnects a client that stops reading, after the answer it waited for past the idle deadline is written',
    async () => {
      const other = new Database(t.databaseUrl.slice('sqlite:'.length));
      other.exec('BEGIN IMMEDIATE');
      const { socket, text, closed, serverLetGo } = watch();
      socket.pause();
      socket.write(bundleRequest.repeat(8) + createRequest(t.token, 8, 'unread'));
      await sleep(1_500); // the idle deadline passes while the create waits for the store
      other.exec('COMMIT');
      other.close();
      await serverLetGo;
      let received = 0;
      socket.on('data', (chunk: Buffer) => (received += chunk.length));
      socket.resume();
      await closed;
      expect(received).toBeLessThan(8 * (await bundleBytes()));
      expect(text()).not.toContain('"unread"');
    },
  );

  (testStoreKind() === 'sqlite' ? it : it.skip)(
    'keeps the connection of a request that waits for the store past the idle deadline, and answers it',
    async () => {
      const other = new Database(t.databaseUrl.slice('sqlite:'.length));
      other.exec('BEGIN IMMEDIATE');
      const { socket, text } = watch();
      socket.write(createRequest(t.token, 7, 'waited'));
      await sleep(1_500); // past two idle deadlines, well inside the store's own wait
      other.exec('COMMIT');
      other.close();
      while (!text().includes('"waited"') && !socket.destroyed) await sleep(20);
      expect(answers(text()).map((answer) => answer.code)).toEqual([200]);
      socket.destroy();
    },
  );
});

describe('a client that stops reading, with a request still arriving behind its answers', () => {
  // The whole-request deadline out of the way: only nothing moving can end this connection.
  const served = listeningTestApp({}, { limits: { ...SCALED, requestMs: 600_000 } });

  it('is disconnected once its answers stop moving, the answer of the request it left unfinished unsent', async () => {
    const accepted = once(served().app.server, 'connection') as Promise<[Socket]>;
    const socket = connect(served().port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.pause(); // never reads: the answers back up, and the last one cannot leave
    const body =
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${served().app.token}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id"';
    socket.write(`${'GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(8)}${body}`);
    const [ours] = await accepted;
    await once(ours, 'close');
    socket.destroy();
  });
});
