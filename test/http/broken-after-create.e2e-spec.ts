import { answers, createRequest, exchange } from '../support/raw-http';
import { listeningTestApp } from '../support/app';

/**
 * A request that breaks inside its body (a bad chunk, a bad trailer), or a HEAD with a body,
 * behind a create on the same connection: the create's 200 is written first, with the plant it
 * stored, then the broken request's own answer, then the connection closes. Alone, each of them
 * is answered too.
 */
describe('a broken request after a create', () => {
  const served = listeningTestApp();
  let nextId = 31_337_000;

  const chunked = (rest: string) =>
    `POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${rest}`;
  const broken: [string, string, boolean][] = [
    ['a chunk size that is not hex', chunked('ZZ\r\n'), false],
    ['a chunk size with 0x', chunked('0x1a\r\n'), false],
    ['a chunk extension with a line break in quotes', chunked('1;a="x\r\ny"\r\n'), false],
    ['a trailer Content-Length', chunked('0\r\nContent-Length: 5\r\n\r\n'), false],
    ['a HEAD /plants with a body', 'HEAD /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}', true],
    ['a HEAD elsewhere with a body', 'HEAD /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}', true],
  ];

  it.each(broken)('writes the 200 of a create, then answers %s', async (_, second, head) => {
    const id = nextId++;
    const { reply, error } = await exchange(served().port, createRequest(served().app.token, id, 'p') + second);
    expect(error).toBeUndefined();
    const got = answers(reply, (index) => head && index === 1);
    expect(got.map((answer) => answer.code)).toEqual([200, 400]);
    expect(got[0].body).toBe('{"name":"p"}');
    expect(got[1].head).toMatch(/\r\nX-Request-Id: \S+/i);
    if (!head) expect(JSON.parse(got[1].body)).toEqual({ error: 400, message: 'Malformed HTTP request' });
    expect(await served().app.storedPlant(String(id))).toEqual({ id: String(id), name: 'p', tag: null });
  });

  it.each(broken)('answers %s sent alone, with the request id it sent', async (_, request, head) => {
    const { reply, error } = await exchange(
      served().port,
      request.replace('Host: x\r\n', 'Host: x\r\nX-Request-Id: mine-1\r\n'),
    );
    expect(error).toBeUndefined();
    const got = answers(reply, () => head);
    expect(got).toHaveLength(1);
    expect(got[0].head).toMatch(/^HTTP\/1\.1 400 /);
    expect(got[0].head).toMatch(/\r\nX-Request-Id: mine-1\r\n/i);
  });
});
