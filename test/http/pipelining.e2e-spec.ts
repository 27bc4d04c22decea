import { answers, createRequest, exchange } from '../support/raw-http';
import { sleep } from '../support/sockets';
import { startTestApp, type TestApp } from '../support/app';

/**
 * Pipelined requests, sent in one write (RFC 9112 §9.3.2): answered in the order they came,
 * every request that runs is answered, and nothing runs after an answer that closes the
 * connection.
 */
describe('pipelining', () => {
  let t: TestApp;
  let port: number;
  let nextId = 1_000;
  beforeAll(async () => {
    t = await startTestApp();
    port = await t.listen();
  });
  afterAll(() => t.close());

  const create = (id: number, connection?: 'close') => createRequest(t.token, id, `plant ${id}`, connection);
  const stored = async (id: number): Promise<boolean> => (await t.storedPlant(String(id))) !== undefined;

  it('answers in the order the requests came', async () => {
    const ids = Array.from({ length: 20 }, () => nextId++);
    const last = ids.length - 1;
    const { reply } = await exchange(port, ids.map((id, i) => create(id, i === last ? 'close' : undefined)).join(''));
    expect(answers(reply).map((answer) => answer.body)).toEqual(ids.map((id) => `{"name":"plant ${id}"}`));
  });

  it.each([
    ['a broken request line', 'GARBAGE\r\n\r\n', 400],
    ['20 KB of headers', `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['Content-Length: -1', 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n', 400],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
  ])('refuses %s after two creates only once both are answered: 200, 200, then the refusal', async (_, bad, code) => {
    const [first, second] = [nextId++, nextId++];
    const { reply, error } = await exchange(port, create(first) + create(second) + bad);
    expect(error).toBeUndefined();
    expect(answers(reply).map((answer) => answer.code)).toEqual([200, 200, code]);
    expect(await stored(first)).toBe(true);
    expect(await stored(second)).toBe(true);
  });

  it('answers every create before a Connection: close, and runs nothing after it', async () => {
    const ids = Array.from({ length: 5 }, () => nextId++);
    const { reply } = await exchange(port, ids.map((id, i) => create(id, i === 2 ? 'close' : undefined)).join(''));
    expect(answers(reply).map((answer) => answer.code)).toEqual([200, 200, 200]);
    await sleep(100); // a batch would have committed by now
    expect(await Promise.all(ids.map(stored))).toEqual([true, true, true, false, false]);
  });

  it.each([
    [
      'a refusal before its body was read',
      (id: number) => create(id).replace(/Content-Length: \d+/, 'Content-Length: 1000'),
    ],
    [
      'a request asking to upgrade',
      (id: number) => create(id).replace('Host: x\r\n', 'Host: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n'),
    ],
    [
      'a repeated Content-Type',
      (id: number) => create(id).replace('Host: x\r\n', 'Host: x\r\nContent-Type: text/plain\r\n'),
    ],
  ])('runs nothing after %s, which closes the connection', async (_, first) => {
    const ids = [nextId++, nextId++, nextId++];
    const unknownToken = (id: number) => first(id).replace(t.token, 'pst_unknown');
    const { reply } = await exchange(port, unknownToken(ids[0]) + create(ids[1]) + create(ids[2]));
    const got = answers(reply);
    expect(got).toHaveLength(1);
    expect(got[0].head).toMatch(/\r\nconnection: close/i);
    await sleep(100);
    expect(await Promise.all(ids.map(stored))).toEqual([false, false, false]);
  });
});
