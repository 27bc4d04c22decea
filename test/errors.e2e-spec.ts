import { jest } from '@jest/globals';
import request from 'supertest';
import { ERROR_CODES, ErrorCode } from '../src/errors/error-codes';
import { PlantsService } from '../src/plants/plants.service';
import { rawRequest, replyBody } from './support/raw-http';
import { Metrics } from '../src/observability/metrics';
import { startTestApp, type TestApp } from './support/app';

/**
 * One test (at least) for every row of the error table (README, `src/errors/error-codes.ts`). Every failure is HTTP 400
 * with `{error, message}` and nothing else in the body.
 */
/**
 * The codes that have a test below, recorded as the tests are declared (so whatever a run
 * selects, `-t` or not): the last test checks that every row of the table has one. Each such
 * test asserts its code when it runs.
 */
const declared = new Set<ErrorCode>();
function answers(code: ErrorCode): typeof it {
  declared.add(code);
  return it;
}

describe('failures', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT: '1kb' });
  });
  afterAll(async () => {
    await t.close();
  });

  function expectFailure(response: request.Response, code: ErrorCode): void {
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(response.body).sort()).toEqual(['error', 'message']);
    expect(response.body.error).toBe(code);
    expect(typeof response.body.message).toBe('string');
    expect(response.body.message.length).toBeGreaterThan(0);
  }

  const authed = () => request(t.server).post('/plants').set('Authorization', `Bearer ${t.token}`);

  describe('400', () => {
    it.each([
      ['malformed JSON', '{"id": 1, "name": '],
      ['trailing garbage', '{"id": 1, "name": "a"} x'],
      ['a body of whitespace', '   '],
    ])('answers %s', async (_what, body) => {
      expectFailure(await authed().set('Content-Type', 'application/json').send(body), ErrorCode.BadRequest);
    });

    it('answers an empty body', async () => {
      expectFailure(await authed().set('Content-Type', 'application/json'), ErrorCode.BadRequest);
      expectFailure(await authed(), ErrorCode.BadRequest);
    });

    it('answers nested arrays where an object belongs', async () => {
      const body = '['.repeat(250) + ']'.repeat(250);
      expectFailure(await authed().set('Content-Type', 'application/json').send(body), ErrorCode.BadRequest);
    });
  });

  answers(ErrorCode.BadRequest)('400: names each bad field once, by its first broken rule', async () => {
    const missing = await authed().send({ name: 'x' });
    expectFailure(missing, ErrorCode.BadRequest);
    expect(missing.body.message).toBe('Invalid NewPlant: id is required');
    const several = await authed().set('Content-Type', 'application/json').send('{"id": "7", "tag": null}');
    expect(several.body.message).toBe(
      'Invalid NewPlant: id must be an integer from -9223372036854775808 to 9223372036854775807 (int64); name is required; tag must be a string',
    );
  });

  answers(ErrorCode.Unauthorized)('401: says the token is missing when the header is only "Bearer"', async () => {
    const response = await request(t.server).post('/plants').set('Authorization', 'Bearer ').send({ id: 1, name: 'a' });
    expectFailure(response, ErrorCode.Unauthorized);
    expect(response.body.message).toMatch(/^Missing token/);
  });

  describe('401', () => {
    it('answers a request without Authorization', async () => {
      const response = await request(t.server).post('/plants').send({ id: 1, name: 'a' });
      expectFailure(response, ErrorCode.Unauthorized);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="plant-store"');
    });

    it('answers another scheme', async () => {
      const response = await request(t.server)
        .post('/plants')
        .set('Authorization', 'Basic dXNlcjpwYXNz')
        .send({ id: 1, name: 'a' });
      expectFailure(response, ErrorCode.Unauthorized);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="plant-store"');
    });

    it.each([
      ['an unknown token', 'Bearer pst_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      ['a token that is not ours at all', 'Bearer hello'],
      ['a tab', 'Bearer\tTOKEN'],
      ['a 10 KB value', `Bearer ${'x'.repeat(10_000)}`],
    ])('answers %s with invalid_token', async (_what, header) => {
      const response = await request(t.server)
        .post('/plants')
        .set('Authorization', header.replace('TOKEN', t.token))
        .send({ id: 1, name: 'a' });
      expectFailure(response, ErrorCode.Unauthorized);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="plant-store", error="invalid_token"');
    });

    it.each([
      ['two spaces', 'Bearer  TOKEN', 4_001],
      ['three spaces', 'Bearer   TOKEN', 4_002],
    ])('accepts %s after the scheme (RFC 6750: one or more)', async (_what, header, id) => {
      const response = await request(t.server)
        .post('/plants')
        .set('Authorization', header.replace('TOKEN', t.token))
        .send({ id, name: 'spaced' });
      expect(response.status).toBe(200);
    });

    it('accepts the scheme in any case', async () => {
      const response = await request(t.server)
        .post('/plants')
        .set('Authorization', `bEaReR ${t.token}`)
        .send({ id: 400, name: 'case' });
      expect(response.status).toBe(200);
    });

    it('never reads a token from the query string or the body', async () => {
      const query = await request(t.server).post(`/plants?access_token=${t.token}`).send({ id: 401, name: 'q' });
      expectFailure(query, ErrorCode.Unauthorized);
      const body = await request(t.server).post('/plants').send({ id: 401, name: 'b', access_token: t.token });
      expectFailure(body, ErrorCode.Unauthorized);
    });

    it('refuses a revoked token on the very next request', async () => {
      const name = `revoke-me-${Date.now()}`;
      const token = await t.tokens.create(name);
      const ok = await request(t.server)
        .post('/plants')
        .set('Authorization', `Bearer ${token}`)
        .send({ id: 402, name: 'r' });
      expect(ok.status).toBe(200);
      await t.tokens.revoke(name);
      const refused = await request(t.server)
        .post('/plants')
        .set('Authorization', `Bearer ${token}`)
        .send({ id: 402, name: 'r' });
      expectFailure(refused, ErrorCode.Unauthorized);
      expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');
    });
  });

  answers(ErrorCode.NotFound)('404: answers an unknown path, with or without a token', async () => {
    expectFailure(await request(t.server).get('/nope'), ErrorCode.NotFound);
    expectFailure(
      await request(t.server).post('/plants/1').set('Authorization', `Bearer ${t.token}`),
      ErrorCode.NotFound,
    );
    const root = await request(t.server).post('/');
    expectFailure(root, ErrorCode.NotFound);
    // /health and /docs exist too: the message does not claim /plants is the only path.
    expect(root.body.message).toBe('Not found: no such path; the interface is POST /plants, documented at /docs');
  });

  answers(ErrorCode.MethodNotAllowed).each(['get', 'put', 'patch', 'delete'] as const)(
    '405: answers %s /plants with Allow: POST',
    async (method) => {
      const response = await request(t.server)[method]('/plants');
      expectFailure(response, ErrorCode.MethodNotAllowed);
      expect(response.headers.allow).toBe('POST');
    },
  );

  answers(ErrorCode.MethodNotAllowed)('405: never reads the body of a public route, token or not', async () => {
    for (const token of [undefined, t.token]) {
      const put = request(t.server).put('/plants').set('Content-Type', 'text/plain');
      const response = await (token === undefined ? put : put.set('Authorization', `Bearer ${token}`)).send('{');
      expectFailure(response, ErrorCode.MethodNotAllowed); // not 415, as reading it would answer
    }
  });

  answers(ErrorCode.Conflict)('409: answers a different plant under a taken id', async () => {
    expect((await authed().send({ id: 500, name: 'first' })).status).toBe(200);
    expectFailure(await authed().send({ id: 500, name: 'second' }), ErrorCode.Conflict);
  });

  answers(ErrorCode.PayloadTooLarge)('413: answers a body over BODY_LIMIT', async () => {
    const response = await authed()
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ id: 501, name: 'x'.repeat(2048) }));
    expectFailure(response, ErrorCode.PayloadTooLarge);
  });

  answers(ErrorCode.UnsupportedMediaType).each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/jsonx',
    'application/json; charset=latin1',
  ])('415: answers Content-Type %s', async (type) => {
    const response = await authed().set('Content-Type', type).send('{"id": 502, "name": "x"}');
    expectFailure(response, ErrorCode.UnsupportedMediaType);
  });

  describe('answered below the framework', () => {
    let port: number;
    beforeAll(async () => {
      port = await t.listen();
    });

    answers(ErrorCode.RequestHeaderFieldsTooLarge)('431: answers oversized headers with the Error body', async () => {
      const reply = await rawRequest(port, `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(replyBody(reply)).toEqual({ error: 431, message: expect.any(String) });
      expect(reply).toMatch(/^X-Request-Id: [0-9a-f-]{36}$/im);
    });

    it('400: answers invalid UTF-8 in the body', async () => {
      const body = Buffer.concat([Buffer.from('{"id": 1, "name": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
      const head =
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
      const reply = await rawRequest(port, Buffer.concat([Buffer.from(head), body]));
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(replyBody(reply)).toEqual({ error: 400, message: 'Request body is not valid UTF-8' });
    });

    answers(ErrorCode.ExpectationFailed)('417: answers an Expect other than 100-continue', async () => {
      const reply = await rawRequest(
        port,
        `POST /plants HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(replyBody(reply)).toEqual({ error: 417, message: expect.any(String) });
    });

    it('400: answers a broken request line with the Error body', async () => {
      const reply = await rawRequest(port, 'THIS IS NOT HTTP\r\n\r\n');
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(replyBody(reply)).toEqual({ error: 400, message: expect.any(String) });
    });
  });

  answers(ErrorCode.InternalServerError)('500: answers an unexpected failure without leaking it', async () => {
    const service = t.app.get(PlantsService);
    const spy = jest.spyOn(service, 'create').mockRejectedValueOnce(new Error('SELECT secret FROM /etc/passwd'));
    try {
      const response = await authed().send({ id: 503, name: 'boom' });
      expectFailure(response, ErrorCode.InternalServerError);
      expect(response.body.message).toBe('Internal server error');
      expect(spy).toHaveBeenCalled();
      expect(response.text).not.toMatch(/secret|passwd|SELECT/);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('503', () => {
  answers(ErrorCode.ServiceUnavailable)('answers while the store is down', async () => {
    const t = await startTestApp();
    try {
      await t.dataSource.destroy();
      const response = await request(t.server)
        .post('/plants')
        .set('Authorization', `Bearer ${t.token}`)
        .send({ id: 1, name: 'a' });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 503, message: expect.any(String) });
    } finally {
      await t.dataSource.initialize();
      await t.close();
    }
  });
});

// Its own app, after the others are closed: passport keeps one "bearer" strategy per process,
// the last one made, so two apps alive at once in one process would check tokens in one store.
describe('429', () => {
  answers(ErrorCode.TooManyRequests)(
    '429: answers a token over RATE_LIMIT, with Retry-After, and counts per token, after the token check',
    async () => {
      const limited = await startTestApp({ RATE_LIMIT: '3', METRICS_PORT: '0' });
      try {
        const create = (token: string, id: number) =>
          request(limited.server).post('/plants').set('Authorization', `Bearer ${token}`).send({ id, name: 'rate' });
        for (let id = 1; id <= 3; id++) expect((await create(limited.token, id)).status).toBe(200);
        const refused = await create(limited.token, 4);
        expect(refused.status).toBe(400);
        expect(refused.body).toEqual({ error: 429, message: expect.any(String) });
        expect(refused.body.message).toContain('RATE_LIMIT');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(await limited.storedPlant('4')).toBeUndefined();
        expect(await limited.app.get(Metrics).registry!.metrics()).toMatch(/^plant_store_rate_limited_total 1$/m);
        const other = await limited.tokens.create('rate-other');
        expect((await create(other, 5)).status).toBe(200);
        // The limit counts tokens: without one the bearer guard answers first, and public
        // routes are never limited.
        const anonymous = await request(limited.server).post('/plants').send({ id: 6, name: 'rate' });
        expect(anonymous.body).toEqual({ error: 401, message: expect.any(String) });
        for (let i = 0; i < 5; i++) expect((await request(limited.server).get('/health')).status).toBe(200);
      } finally {
        await limited.close();
      }
    },
  );
});

describe('the error table', () => {
  it('has a test above for every code', () => {
    expect([...declared].sort()).toEqual([...ERROR_CODES].sort());
  });
});
