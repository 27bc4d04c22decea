import { connect, type Socket } from 'node:net';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from './support/app';

/**
 * What a connection sees (RFC 9112 §9.3.2, §9.6): answers in request order, nothing run after
 * an answer that closes the connection, and a refusal that reaches the client rather than being
 * lost to a reset. Each test sends its requests in one write, as a pipelining client does.
 */
describe('connections', () => {
  let t: TestApp;
  let port: number;
  const log: string[] = [];
  let nextId = 7_000_000;
  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT: '100kb' }, { log });
    await t.app.listen(0, '127.0.0.1');
    port = (t.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (id: number, token = t.token, extra = ''): string => {
    const body = `{"id":${id},"name":"plant ${id}"}`;
    return (
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
      `${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    );
  };

  interface Exchange {
    /** Everything the server sent, in order. */
    reply: string;
    /** The socket error the client met, if any (ECONNRESET: the answer may have been lost). */
    error?: string;
  }

  /**
   * Writes `payload` (in one write unless it is an array) and closes its side, as a client with
   * nothing more to send does, then reads until the server closes. `readAfterMs`: a client that
   * is slow to read (a reset meanwhile makes its kernel drop the answer it has not read).
   */
  function exchange(
    payload: string | Buffer | (string | Buffer)[],
    readAfterMs = 0,
    timeoutMs = 5000,
  ): Promise<Exchange> {
    return new Promise((resolve, reject) => {
      const socket: Socket = connect(port, '127.0.0.1');
      if (readAfterMs > 0) {
        socket.pause();
        setTimeout(() => socket.resume(), readAfterMs);
      }
      const chunks: Buffer[] = [];
      let error: string | undefined;
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`still open after ${timeoutMs} ms; got: ${Buffer.concat(chunks).toString()}`));
      }, timeoutMs);
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
      socket.on('close', () => {
        clearTimeout(timer);
        resolve({ reply: Buffer.concat(chunks).toString('utf8'), error });
      });
      const parts = Array.isArray(payload) ? payload : [payload];
      parts.forEach((part, i) => (i === parts.length - 1 ? socket.end(part) : socket.write(part)));
    });
  }

  /** The status line and body of each answer, in the order they came. */
  function answers(reply: string): { code: number; body: string }[] {
    const found: { code: number; body: string }[] = [];
    let rest = reply;
    while (rest.startsWith('HTTP/1.1 ')) {
      const headEnd = rest.indexOf('\r\n\r\n');
      const head = rest.slice(0, headEnd);
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
      const body = rest.slice(headEnd + 4, headEnd + 4 + length);
      const code = head.startsWith('HTTP/1.1 200') ? 200 : (JSON.parse(body) as { error: number }).error;
      found.push({ code, body });
      rest = rest.slice(headEnd + 4 + length);
    }
    expect(rest).toBe('');
    return found;
  }

  describe('a refusal of later bytes waits for every earlier answer', () => {
    it.each([
      ['a broken request line', 'GARBAGE\r\n\r\n', 400],
      ['20 KB of headers', `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      ['Content-Length: -1', 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n', 400],
      ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
    ])('%s after two creates: 200, 200, then the refusal', async (_case, bad, code) => {
      const first = nextId++;
      const second = nextId++;
      const { reply, error } = await exchange(create(first) + create(second) + bad);
      expect(error).toBeUndefined();
      const got = answers(reply);
      expect(got.map((answer) => answer.code)).toEqual([200, 200, code]);
      expect(got[0].body).toBe(`{"name":"plant ${first}"}`);
      expect(got[1].body).toBe(`{"name":"plant ${second}"}`);
      expect(await t.storedPlant(String(first))).toBeDefined();
      expect(await t.storedPlant(String(second))).toBeDefined();
    });
  });

  describe('nothing runs after an answer that closes the connection', () => {
    it.each([
      ['an unknown token', (id: number) => create(id, 'pst_unknown')],
      ['the client asking to close', (id: number) => create(id, t.token, 'Connection: close\r\n')],
      // Node's parser reads nothing after a request asking to upgrade (and this server upgrades none).
      [
        'a request asking to upgrade to WebSocket',
        (id: number) => create(id, t.token, 'Connection: Upgrade\r\nUpgrade: websocket\r\n'),
      ],
    ])('%s, then two creates: one answer, and neither create stored', async (_case, firstRequest) => {
      const [first, second, third] = [nextId++, nextId++, nextId++];
      const { reply } = await exchange(firstRequest(first) + create(second) + create(third));
      const got = answers(reply);
      expect(got).toHaveLength(1);
      expect(reply).toMatch(/\r\nconnection: close\r\n/i);
      await new Promise((resolve) => setTimeout(resolve, 100)); // a batch would have committed by now
      expect(await t.storedPlant(String(second))).toBeUndefined();
      expect(await t.storedPlant(String(third))).toBeUndefined();
    });

    it.each([
      ['no Authorization', (id: number) => create(id).replace(/Authorization: [^\r]*\r\n/, '')],
      ['text/plain', (id: number) => create(id).replace('application/json', 'text/plain')],
      ['a path that does not exist', (id: number) => create(id).replace('POST /plants', 'POST /nowhere')],
    ])('%s, then two creates: every create that ran was answered', async (_case, firstRequest) => {
      const [first, second, third] = [nextId++, nextId++, nextId++];
      const { reply } = await exchange(firstRequest(first) + create(second) + create(third) + 'GARBAGE\r\n\r\n');
      const got = answers(reply);
      expect(got[0].code).not.toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const [i, id] of [second, third].entries()) {
        const answered = got[i + 1]?.code === 200;
        expect({ id, stored: (await t.storedPlant(String(id))) !== undefined }).toEqual({ id, stored: answered });
      }
    });
  });

  describe('a refusal sent before the request was read whole reaches the client', () => {
    it('431 for 200 KB of headers, ten times over, never reset', async () => {
      for (let i = 0; i < 10; i++) {
        const { reply, error } = await exchange(
          `POST /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(200_000)}\r\n\r\n`,
          100,
        );
        expect({ error, codes: answers(reply).map((answer) => answer.code) }).toEqual({
          error: undefined,
          codes: [431],
        });
      }
    });

    it.each([
      ['401', 'Content-Type: application/json\r\n', 401],
      ['413', `Authorization: Bearer TOKEN\r\nContent-Type: application/json\r\n`, 413],
      ['415', `Authorization: Bearer TOKEN\r\nContent-Type: text/plain\r\n`, 415],
    ])('%s before an 8 MB body, never reset', async (_case, headers, code) => {
      // More than the kernel buffers on both ends hold: most of it is still to come when the answer leaves.
      const body = Buffer.alloc(8 * 1024 * 1024, 'a');
      for (let i = 0; i < 5; i++) {
        const head = `POST /plants HTTP/1.1\r\nHost: x\r\n${headers.replace('TOKEN', t.token)}Content-Length: ${body.length}\r\n\r\n`;
        const { reply, error } = await exchange([head, body], 100);
        expect({ error, codes: answers(reply).map((answer) => answer.code) }).toEqual({
          error: undefined,
          codes: [code],
        });
      }
    });
  });

  /** Takes the plant table's write lock from another connection: creates wait until released. */
  async function holdPlantTable(): Promise<() => Promise<void>> {
    if (t.databaseUrl.startsWith('sqlite:')) {
      const other = new Database(t.databaseUrl.slice('sqlite:'.length));
      other.exec('BEGIN IMMEDIATE');
      return () => {
        other.exec('COMMIT');
        other.close();
        return Promise.resolve();
      };
    }
    const other = new pg.Client({ connectionString: t.databaseUrl });
    await other.connect();
    await other.query('BEGIN');
    await other.query('LOCK TABLE "plant" IN EXCLUSIVE MODE');
    return async () => {
      await other.query('COMMIT');
      await other.end();
    };
  }

  it('a create whose client went away is logged, once, saying so, and stored exactly when it says 200', async () => {
    const ids = Array.from({ length: 20 }, () => nextId++);
    // The store is held while the creates arrive and their clients reset (well within the
    // store's own wait bound): every answer comes after its client has gone.
    const release = await holdPlantTable();
    const gone = Promise.all(
      ids.map(
        (id) =>
          new Promise<void>((resolve) => {
            const socket = connect(port, '127.0.0.1');
            socket.on('error', () => undefined);
            socket.on('close', () => resolve());
            socket.write(create(id, t.token, `X-Request-Id: gone-${id}\r\n`), () => {
              setTimeout(() => socket.resetAndDestroy(), 20);
            });
          }),
      ),
    );
    await gone;
    await release();
    const linesFor = (id: number) => log.filter((line) => line.includes(`"requestId":"gone-${id}"`));
    const deadline = Date.now() + 5000;
    while (ids.some((id) => linesFor(id).length === 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Each got one line, and a create is stored exactly when its line says 200 (one whose body
    // the server had not read yet when its client went is a 400). A line says the client had
    // gone when the server could tell before answering: a reset that arrived before the answer
    // was written (whether it does is up to the kernel and Node's version, so not every line).
    for (const id of ids) {
      const lines = linesFor(id);
      expect({ id, lines: lines.length }).toEqual({ id, lines: 1 });
      const stored = (await t.storedPlant(String(id))) !== undefined;
      expect({ id, stored }).toEqual({ id, stored: lines[0].includes('"res":{"status":200}') });
    }
    expect(ids.some((id) => linesFor(id)[0].includes('"clientClosed":true'))).toBe(true);
  });
});
