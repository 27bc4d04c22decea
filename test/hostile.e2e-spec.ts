/**
 * @slow 15 s: waits out the 10 s header timeout
 */
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { LINGER_MS } from '../src/edge/node-sockets';
import { MAX_FIELD_NESTING, MAX_NESTING } from '../src/plants/json-body';
import request from 'supertest';
import { startTestApp, type TestApp } from './support/app';
import { rawRequest, replyBody } from './support/raw-http';

/** Input meant to break things: each is answered in the contract, and the server stays up. */
describe('hostile input', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT: '1mb' });
    await t.app.listen(0, '127.0.0.1');
    port = (t.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await t.close();
  });
  afterEach(async () => {
    // still up, and still right
    const alive = await request(t.server).get('/health');
    expect(alive.status).toBe(200);
  });

  const post = (body: string) =>
    request(t.server)
      .post('/plants')
      .set('Authorization', `Bearer ${t.token}`)
      .set('Content-Type', 'application/json')
      .send(body);

  it.each([
    ['arrays', (n: number) => '['.repeat(n) + ']'.repeat(n)],
    ['objects', (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)],
    ['an id', (n: number) => `{"id": ${'['.repeat(n)}${']'.repeat(n)}, "name": "deep"}`],
  ])('answers %s nested 50,000 levels deep with 400', async (_what, build) => {
    const response = await post(build(50_000));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 400, message: expect.any(String) });
  });

  it.each([
    [MAX_FIELD_NESTING, /\bid must be an integer/],
    [MAX_FIELD_NESTING + 1, `Invalid NewPlant: id is nested more than ${MAX_FIELD_NESTING} levels deep`],
    [MAX_NESTING - 1, `Invalid NewPlant: id is nested more than ${MAX_FIELD_NESTING} levels deep`],
  ])('answers an id nested %i levels deep with 400', async (depth, message) => {
    const response = await post(`{"id": ${'['.repeat(depth)}${']'.repeat(depth)}, "name": "deep"}`);
    expect(response.body).toEqual({
      error: 400,
      message: typeof message === 'string' ? message : expect.stringMatching(message),
    });
  });

  it('refuses a body nested one level deeper than it may, wherever: 400', async () => {
    const depth = MAX_NESTING;
    const response = await post(`{"id": 1, "name": "deep", "x": ${'['.repeat(depth)}${']'.repeat(depth)}}`);
    expect(response.body).toEqual({
      error: 400,
      message: `Request body is not valid JSON: nested more than ${MAX_NESTING} levels deep`,
    });
  });

  it.each(['1e400', '-1e400', '1e-400', '123456789012345678901234567890'])('refuses %s as an id', async (id) => {
    const response = await post(`{"id": ${id}, "name": "huge"}`);
    expect(response.body).toEqual({ error: 400, message: expect.stringMatching(/\bid must be an integer/) });
  });

  it('takes -0 as the id 0', async () => {
    expect((await post('{"id": -0, "name": "zero"}')).status).toBe(200);
    expect(await t.storedPlant('0')).toEqual({ id: '0', name: 'zero', tag: null });
    expect((await post('{"id": 0, "name": "zero"}')).status).toBe(200); // the same plant
  });

  it.each([
    '{"id": 600, "name": "p", "__proto__": {"isAdmin": true}}',
    '{"id": 601, "name": "p", "constructor": {"prototype": {"isAdmin": true}}}',
    '{"id": 602, "name": "p", "__proto__": {"__proto__": {"isAdmin": true}}}',
  ])('pollutes no prototype with %s', async (body) => {
    const response = await post(body);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ name: 'p' });
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>).isAdmin).toBeUndefined();
  });

  it('keeps any well-formed Unicode exactly, astral planes and escapes included', async () => {
    const name = 'Strelitzia \u{1F33F} \u00e9\u0301 \u202e \uffff \t\n"\\';
    const response = await post(`{"id": 603, "name": ${JSON.stringify(name)}, "tag": "\\ud83c\\udf3f"}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ name, tag: '\u{1F33F}' });
    expect(await t.storedPlant('603')).toEqual({ id: '603', name, tag: '\u{1F33F}' });
  });

  it.each([
    ['a lone surrogate', '{"id": 604, "name": "a\\ud800b"}', /name must not contain/],
    ['a NUL character', '{"id": 604, "name": "x", "tag": "a\\u0000b"}', /tag must not contain/],
  ])('refuses %s, which a store could not keep exactly', async (_what, body, message) => {
    const response = await post(body);
    expect(response.body).toEqual({ error: 400, message: expect.stringMatching(message) });
  });

  it('refuses a non-Latin-1 Authorization value cleanly', async () => {
    const reply = await rawRequest(
      port,
      Buffer.concat([
        Buffer.from('POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer '),
        Buffer.from('🌿tøken', 'utf8'),
        Buffer.from('\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}'),
      ]),
    );
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(replyBody(reply)).toEqual({ error: 401, message: expect.any(String) });
  });

  it('answers a body that lies about its length without hanging', async () => {
    const reply = await rawRequest(
      port,
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\nContent-Length: 5\r\nConnection: close\r\n\r\n{"id": 1, "name": "longer than five"}`,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(replyBody(reply)).toEqual({ error: 400, message: expect.any(String) });
  });

  it('cuts off a client that dribbles its headers for more than 10 s', async () => {
    // Refused once the 10 s have passed (checked every second), then the lingering close gives
    // the refusal LINGER_MS to arrive before the connection goes, whatever the client still sends.
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let writes = 0;
    const dribble = setInterval(() => {
      if (!socket.destroyed) socket.write(writes++ === 0 ? 'POST /plants HTTP/1.1\r\n' : `X-Slow-${writes}: y\r\n`);
    }, 500);
    const closedAfter = await new Promise<number>((resolve) => {
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(Date.now() - started));
    });
    clearInterval(dribble);
    expect(closedAfter).toBeGreaterThanOrEqual(9_500);
    expect(closedAfter).toBeLessThan(11_000 + LINGER_MS + 3_000); // slack for a loaded machine
  }, 20_000);
});
