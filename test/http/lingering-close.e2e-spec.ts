import { answers, exchange } from '../support/raw-http';
import { startTestApp, type TestApp } from '../support/app';

/**
 * A refusal sent before the request was read whole closes the connection, and reaches the client
 * however much it still sends: the server reads and drops it for a while (a lingering close)
 * rather than letting the kernel reset the connection and lose the answer.
 */
describe('a refusal before the request was read whole', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT: '100kb' });
    port = await t.listen();
  });
  afterAll(() => t.close());

  it('431 for 200 KB of headers, ten times over, never reset', async () => {
    for (let i = 0; i < 10; i++) {
      const { reply, error } = await exchange(
        port,
        `POST /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(200_000)}\r\n\r\n`,
        { readAfterMs: 100 },
      );
      expect({ error, codes: answers(reply).map((answer) => answer.code) }).toEqual({ error: undefined, codes: [431] });
    }
  });

  it.each([
    ['401', 'Content-Type: application/json\r\n', 401],
    ['413', 'Authorization: Bearer TOKEN\r\nContent-Type: application/json\r\n', 413],
    ['415', 'Authorization: Bearer TOKEN\r\nContent-Type: text/plain\r\n', 415],
  ])('%s before an 8 MB body, closing the connection, never reset', async (_, headers, code) => {
    // More than the kernel buffers on both ends hold: most of it is still to come when the answer leaves.
    const body = Buffer.alloc(8 * 1024 * 1024, 'a');
    for (let i = 0; i < 5; i++) {
      const head =
        `POST /plants HTTP/1.1\r\nHost: x\r\n${headers.replace('TOKEN', t.token)}` +
        `Content-Length: ${body.length}\r\n\r\n`;
      const { reply, error } = await exchange(port, [head, body], { readAfterMs: 100 });
      const got = answers(reply);
      expect({ error, codes: got.map((answer) => answer.code) }).toEqual({ error: undefined, codes: [code] });
      expect(got[0].head).toMatch(/\r\nconnection: close/i);
    }
  });
});
