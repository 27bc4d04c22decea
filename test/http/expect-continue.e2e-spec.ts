import { connect } from 'node:net';
import { answers, exchange } from '../support/raw-http';
import { startTestApp, type TestApp } from '../support/app';

/**
 * `Expect: 100-continue`: the client waits for a `100 Continue` before sending its body. The
 * server sends one only once the request has passed every check of its headers, so that a
 * refusal (credentials, size, media type) comes first and alone. Any other `Expect` is 417. An
 * HTTP/1.0 client's `Expect` is ignored (RFC 9110 §10.1.1).
 */
describe('Expect', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT: '1kb' });
    port = await t.listen();
  });
  afterAll(() => t.close());

  const head = (headers: string, length: number): string =>
    `POST /plants HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n${headers}Content-Length: ${length}\r\n\r\n`;

  it('sends 100 Continue to an accepted request, and then its answer', async () => {
    const body = '{"id": 1, "name": "expected"}';
    const headers = `Authorization: Bearer ${t.token}\r\nContent-Type: application/json\r\nConnection: close\r\n`;
    // The body is sent only once the 100 has come.
    const reply = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text === 'HTTP/1.1 100 Continue\r\n\r\n') socket.write(body);
      });
      socket.on('close', () => resolve(text));
      socket.write(head(headers, body.length));
    });
    expect(answers(reply).map((answer) => answer.code)).toEqual([100, 200]);
  });

  it.each([
    ['no credentials', 'Content-Type: application/json\r\n', 100, 401],
    ['a body over BODY_LIMIT', 'Authorization: Bearer TOKEN\r\nContent-Type: application/json\r\n', 5_000, 413],
    ['another media type', 'Authorization: Bearer TOKEN\r\nContent-Type: text/plain\r\n', 100, 415],
  ])('refuses %s with its 400 before any 100', async (_, headers, length, code) => {
    // The client never sends the body: it waits for a 100 that must not come.
    const { reply } = await exchange(port, head(headers.replace('TOKEN', t.token), length));
    expect(answers(reply).map((answer) => answer.code)).toEqual([code]);
  });

  it.each([
    ['100-continue', 10],
    ['teapot', 11],
  ])('ignores Expect: %s from an HTTP/1.0 client', async (expectation, id) => {
    const body = `{"id": ${id}, "name": "http/1.0 ${expectation}"}`;
    const { reply } = await exchange(
      port,
      `POST /plants HTTP/1.0\r\nExpect: ${expectation}\r\nAuthorization: Bearer ${t.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(reply.slice(reply.indexOf('\r\n\r\n') + 4)).toBe(JSON.stringify({ name: `http/1.0 ${expectation}` }));
  });

  it('answers an Expect other than 100-continue with 417, in the contract', async () => {
    const { reply } = await exchange(
      port,
      'GET /health HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n',
    );
    const [answer] = answers(reply);
    expect(answer.code).toBe(417);
    expect(answer.head).toMatch(/\r\nX-Request-Id: \S+/i);
  });
});
