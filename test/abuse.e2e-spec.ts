import { connect } from 'node:net';
import { jest } from '@jest/globals';
import { ValidationPipe } from '@nestjs/common';
import request from 'supertest';
import { startTestApp, type TestApp } from './support/app';
import { rawRequest, replyBody } from './support/raw-http';

/**
 * What an abusive client meets: every answer in the contract, and nothing that makes the server
 * spend more than the request is worth. (Timeouts and shutdown need a real process: see
 * test/process/stalled-body.spec.ts, slow-reader.spec.ts and shutdown.spec.ts.)
 */
describe('abusive clients', () => {
  let t: TestApp;
  let port: number;
  const log: string[] = [];
  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT: '1mb' }, { log });
    port = await t.listen();
  });
  afterAll(async () => {
    await t.close();
  });

  function expectRawFailure(reply: string, code: number): void {
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(reply).toMatch(/\r\nx-request-id: \S+\r\n/i);
    expect(replyBody(reply)).toEqual({ error: code, message: expect.any(String) });
  }

  describe("answers in the contract what Node's HTTP server would answer on its own", () => {
    it('an Expect other than 100-continue: 417', async () => {
      const reply = await rawRequest(
        port,
        'POST /plants HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
      );
      expectRawFailure(reply, 417);
    });

    it('an HTTP/1.1 request without Host: 400', async () => {
      const reply = await rawRequest(port, 'POST /plants HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      expectRawFailure(reply, 400);
    });

    it('two Host headers: 400', async () => {
      const reply = await rawRequest(
        port,
        'POST /plants HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
      );
      expectRawFailure(reply, 400);
    });

    it('a transfer coding other than chunked (gzip, chunked): 400, and nothing stored', async () => {
      const body = '{"id": 417001, "name": "gzipped?"}';
      const reply = await rawRequest(
        port,
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\n` +
          `Transfer-Encoding: gzip, chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      );
      expectRawFailure(reply, 400);
      expect(await t.storedPlant('417001')).toBeUndefined();
    });

    it.each(['HTTP/2.0', 'HTTP/1.2'])('a request line of %s: 400', async (version) => {
      const reply = await rawRequest(port, `POST /plants ${version}\r\nContent-Length: 0\r\n\r\n`);
      expectRawFailure(reply, 400);
    });

    it.each([
      ['Authorization', () => `Authorization: Bearer ${t.token}\r\nAuthorization: Bearer other\r\n`],
      ['Content-Type', () => `Authorization: Bearer ${t.token}\r\nContent-Type: application/json\r\n`],
      ['Content-Length', () => `Authorization: Bearer ${t.token}\r\nContent-Length: 30\r\n`],
    ])('a repeated %s: 400, and nothing stored', async (_name, extra) => {
      const body = '{"id": 417002, "name": "twice"}';
      const reply = await rawRequest(
        port,
        `POST /plants HTTP/1.1\r\nHost: x\r\n${extra()}Content-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      );
      expectRawFailure(reply, 400);
      expect(await t.storedPlant('417002')).toBeUndefined();
    });

    it('POST /health: 405 with Allow: GET', async () => {
      const reply = await rawRequest(
        port,
        'POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
      );
      expectRawFailure(reply, 405);
      expect(reply).toMatch(/\r\nallow: GET\r\n/i);
    });

    it('CONNECT: 405, and a log line', async () => {
      const reply = await rawRequest(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
      expectRawFailure(reply, 405);
      expect(log.some((line) => line.includes('"method":"CONNECT"'))).toBe(true);
    });
  });

  it.each(['/PLANTS', '/Plants', '/plants/', '/plants//'])(
    'routes %s nowhere (404), and stores nothing',
    async (path) => {
      const response = await request(t.server)
        .post(path)
        .set('Authorization', `Bearer ${t.token}`)
        .send({ id: 404_404, name: 'loose' });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 404, message: expect.any(String) });
      expect(await t.storedPlant('404404')).toBeUndefined();
    },
  );

  describe('closes the connection instead of draining a body it refused before reading', () => {
    /** Sends headers declaring a huge body and a few bytes of it; resolves with the reply once the server closes. */
    function refusedUpload(headers: string): Promise<{ reply: string; closedInMs: number }> {
      return new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        const started = Date.now();
        let reply = '';
        const timer = setTimeout(() => {
          socket.destroy();
          reject(new Error(`still open after 3 s; got: ${reply}`));
        }, 3000);
        socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
        socket.on('error', () => undefined);
        socket.on('close', () => {
          clearTimeout(timer);
          resolve({ reply, closedInMs: Date.now() - started });
        });
        socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 ** 53 - 1}\r\n${headers}\r\n{"id":`);
      });
    }

    it('after a 401', async () => {
      const { reply } = await refusedUpload('Content-Type: application/json\r\n');
      expect(reply).toMatch(/\r\nconnection: close\r\n/i);
      expect(replyBody(reply)).toMatchObject({ error: 401 });
    });

    it('after a 413', async () => {
      const { reply } = await refusedUpload(`Authorization: Bearer ${t.token}\r\nContent-Type: application/json\r\n`);
      expect(reply).toMatch(/\r\nconnection: close\r\n/i);
      expect(replyBody(reply)).toEqual({ error: 413, message: expect.stringContaining('BODY_LIMIT') });
    });
  });

  describe('with a token', () => {
    const post = (body: string) =>
      request(t.server)
        .post('/plants')
        .set('Authorization', `Bearer ${t.token}`)
        .set('Content-Type', 'application/json')
        .send(body);

    it('ignores deep nesting inside an unknown property: 200', async () => {
      const body = `{"id": 3000, "name": "deep", "x": ${'['.repeat(3000)}${']'.repeat(3000)}}`;
      const response = await post(body);
      expect(response.body).toEqual({ name: 'deep' });
      expect(response.status).toBe(200);
    });

    it('hands only id, name and tag on to validation, however many unknown keys', async () => {
      const keys = Array.from({ length: 20_000 }, (_, i) => `"k${i}":${i}`).join(',');
      const spy = jest.spyOn(ValidationPipe.prototype, 'transform');
      try {
        const response = await post(`{"id": 20000, "name": "wide", ${keys}}`);
        expect(response.status).toBe(200);
        const handed = spy.mock.calls.map(([value]) => value as Record<string, unknown>);
        expect(handed).toHaveLength(1);
        expect(Object.keys(handed[0]).sort()).toEqual(['id', 'name', 'tag']);
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('under /docs', () => {
    it.each(['/docs/swagger-ui-bundle.js.map', '/docs/package.json', '/docs/README.md', '/docs/absolute-path.js'])(
      'serves no %s (404)',
      async (path) => {
        const response = await request(t.server).get(path);
        expect(response.status).toBe(400);
        expect(response.body).toEqual({ error: 404, message: expect.any(String) });
      },
    );

    it('sends security headers, and keeps no token in the browser', async () => {
      const page = await request(t.server).get('/docs/');
      expect(page.status).toBe(200);
      expect(page.headers['content-security-policy']).toContain("default-src 'self'");
      expect(page.headers['x-content-type-options']).toBe('nosniff');
      expect(page.headers['x-frame-options']).toBe('SAMEORIGIN');
      const init = await request(t.server).get('/docs/swagger-ui-init.js');
      expect(init.text).toContain('"persistAuthorization": false');
    });
  });

  describe('the request log', () => {
    const TOKEN = 'pst_SECRETSECRETSECRETSECRETSECRETSECRETSECRE';

    it.each([
      ['a fragment', `POST /plants#${TOKEN} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`],
      [
        'userinfo in an absolute-form target',
        `POST http://u:${TOKEN}@x/plants HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      ],
      [
        'a query',
        `POST /plants?access_token=${TOKEN} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      ],
    ])('never holds a token sent in %s', async (_where, payload) => {
      const before = log.length;
      await rawRequest(port, payload);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const lines = log.slice(before);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).not.toContain('SECRET');
      expect(lines.some((line) => line.includes('"path":"/plants"'))).toBe(true);
    });

    it('writes a long path once, and at most 256 characters of it', async () => {
      const before = log.length;
      await rawRequest(port, `GET /${'a'.repeat(12_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const line = log.slice(before).find((entry) => entry.includes('"res"'))!;
      expect(line.length).toBeLessThan(1000);
      expect(line.match(/aaaa/g)?.length).toBeLessThan(70);
    });
  });
});
