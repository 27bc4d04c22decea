import { connect } from 'node:net';
import request from 'supertest';
import { startTestApp, type TestApp } from './support/app';
import { rawRequest, replyBody } from './support/raw-http';

/** Input meant to break things: each is answered in the contract, and the server stays up. */
describe('hostile input', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT: '1mb' }, { limits: { headersMs: 1_000, requestMs: 2_000, idleMs: 1_000 } });
    port = await t.listen();
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

  it.each([64, 4096, 50_000])('answers an id nested %i levels deep with 400, never walking it', async (depth) => {
    const response = await post(`{"id": ${'['.repeat(depth)}${']'.repeat(depth)}, "name": "deep"}`);
    expect(response.body).toEqual({ error: 400, message: expect.stringMatching(/\bid must be an integer/) });
  });

  it('takes a body nested deep anywhere but in its fields: unknown properties are ignored', async () => {
    const depth = 50_000;
    const response = await post(`{"id": 610, "name": "deep", "x": ${'['.repeat(depth)}${']'.repeat(depth)}}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ name: 'deep' });
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

  it('cuts off a client that dribbles its headers past the headers deadline, answering it first', async () => {
    // This app's deadline is 1 s (10 s in production), checked every second.
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let writes = 0;
    let reply = '';
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
    const dribble = setInterval(() => {
      if (!socket.destroyed) socket.write(writes++ === 0 ? 'POST /plants HTTP/1.1\r\n' : `X-Slow-${writes}: y\r\n`);
    }, 100);
    const closedAfter = await new Promise<number>((resolve) => {
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(Date.now() - started));
    });
    clearInterval(dribble);
    expect(closedAfter).toBeGreaterThanOrEqual(900);
    expect(replyBody(reply)).toEqual({ error: 400, message: expect.stringMatching(/^Request timed out/) });
  });
});
