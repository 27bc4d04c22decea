import { jest } from '@jest/globals';
import { ValidationPipe } from '@nestjs/common';
import fc from 'fast-check';
import { stringify } from 'lossless-json';
import request from 'supertest';
import { ApiTokenEntity } from '../src/auth/api-token.entity';
import { generateToken, hashToken } from '../src/auth/bearer-auth';
import { startTestApp, type TestApp } from './support/app';

// Hundreds of requests to two apps: under a full suite on two cores they need more than 5 s.
jest.setTimeout(120_000);

/** What a client can compare of two answers: everything but the request's own id. */
function answer(response: request.Response): unknown {
  return {
    status: response.status,
    body: response.text,
    contentType: response.headers['content-type'],
    challenge: response.headers['www-authenticate'],
    allow: response.headers.allow,
    retryAfter: response.headers['retry-after'],
    connection: response.headers.connection,
  };
}

/**
 * The fast path's shortcuts (FastValidationPipe, FastBearerAuthGuard) held to the stock pieces
 * they stand for: the same generated requests, in the same order, to an app with FAST_PATH on
 * and one with it off, must get the same answers.
 */
describe('FAST_PATH on and off', () => {
  let fast: TestApp;
  let stock: TestApp;
  // passport keeps one `bearer` strategy per process: the app started last checks the tokens of
  // both. So both stores hold the same two tokens.
  const valid = generateToken();
  const revoked = generateToken();

  beforeAll(async () => {
    [fast, stock] = await Promise.all([startTestApp({ FAST_PATH: 'on' }), startTestApp({ FAST_PATH: 'off' })]);
    const createdAt = new Date().toISOString();
    for (const t of [fast, stock]) {
      await t.dataSource.getRepository(ApiTokenEntity).insert([
        { name: 'shared', tokenHash: hashToken(valid), createdAt, revokedAt: null },
        { name: 'shared-revoked', tokenHash: hashToken(revoked), createdAt, revokedAt: createdAt },
      ]);
    }
  });
  afterAll(async () => {
    await Promise.all([fast?.close(), stock?.close()]);
  });

  /** An Authorization header: the valid or the revoked token, or anything at all. */
  const authorization = fc.oneof(
    { weight: 4, arbitrary: fc.constant('Bearer {valid}') },
    fc.constantFrom(
      undefined,
      '',
      'Bearer',
      'Bearer ',
      'bearer {valid}',
      'BEARER   {valid}',
      'Bearer {revoked}',
      'Bearer {valid} extra',
      'Basic dXNlcjpwYXNz',
      'Bearer ps_0000000000000000000000000000000000000000000',
      'Token {valid}',
    ),
    fc.string().map((text) => `Bearer ${text}`),
    fc.string(),
  );

  const field = fc.oneof(
    fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
    fc.integer({ min: 1, max: 50 }), // small ids, so that some creates meet a taken id
    fc.string({ maxLength: 8 }),
    fc.jsonValue(),
    fc.constantFrom(null, '', 5.5, '7', true),
  );
  const body = fc.oneof(
    { weight: 6, arbitrary: fc.record({ id: field, name: field, tag: field }, { requiredKeys: [] }).map(stringify) },
    fc.jsonValue().map((value) => JSON.stringify(value)),
    fc.string(),
  );

  it('gives the same answer to every request, whichever pieces run', async () => {
    await fc.assert(
      fc.asyncProperty(authorization, body, async (header, text) => {
        const send = (t: TestApp): Promise<request.Response> => {
          let call = request(t.server).post('/plants').set('Content-Type', 'application/json');
          if (header !== undefined) {
            call = call.set('Authorization', header.replace('{valid}', valid).replace('{revoked}', revoked));
          }
          return call.send(text ?? '');
        };
        expect(answer(await send(fast))).toEqual(answer(await send(stock)));
      }),
      { numRuns: 400 },
    );
  });
});

describe('a shortcut whose internals have changed', () => {
  it('runs the stock piece in its place, says so in one warning line, and answers as before', async () => {
    const log: string[] = [];
    const own = Object.getOwnPropertyDescriptor(ValidationPipe.prototype, 'stripProtoKeys');
    // As a new release of @nestjs/common might have it.
    Object.defineProperty(ValidationPipe.prototype, 'stripProtoKeys', {
      value: (_value: unknown, _seen: unknown) => undefined,
      configurable: true,
      writable: true,
    });
    let t: TestApp | undefined;
    try {
      t = await startTestApp({ FAST_PATH: 'on' }, { log });
    } finally {
      if (own !== undefined) Object.defineProperty(ValidationPipe.prototype, 'stripProtoKeys', own);
    }
    try {
      const warnings = log
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((l) => l.level === 40);
      expect(warnings.map((line) => line.msg)).toEqual([
        "fast path: FastValidationPipe is off (ValidationPipe.stripProtoKeys takes 2 parameters, not 1); @nestjs/common's ValidationPipe runs instead",
      ]);
      const created = await request(t.server)
        .post('/plants')
        .set('Authorization', `Bearer ${t.token}`)
        .set('Content-Type', 'application/json')
        .send('{"id": 9007199254740993, "name": "stock"}');
      expect([created.status, created.text]).toEqual([200, '{"name":"stock"}']);
    } finally {
      await t.close();
    }
  });
});
