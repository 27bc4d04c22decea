import request from 'supertest';
import { startTestApp, type TestApp } from './support/app';
import { testStoreKind } from './support/databases';

describe('POST /plants', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (body: string | object) =>
    request(t.server)
      .post('/plants')
      .set('Authorization', `Bearer ${t.token}`)
      .set('Content-Type', 'application/json')
      .send(typeof body === 'string' ? body : JSON.stringify(body));

  const storedPlant = (id: string) => t.storedPlant(id);

  it('answers 200 with exactly the Plant that was stored', async () => {
    const response = await post({ id: 1, name: 'Monstera', tag: 'aroid' });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual({ name: 'Monstera', tag: 'aroid' });
    expect(await storedPlant('1')).toEqual({ id: '1', name: 'Monstera', tag: 'aroid' });
  });

  it('leaves tag out of the answer when the plant has none, and stores none', async () => {
    const response = await post({ id: 2, name: 'Fern' });
    expect(response.status).toBe(200);
    expect(response.text).toBe('{"name":"Fern"}');
    expect(await storedPlant('2')).toEqual({ id: '2', name: 'Fern', tag: null });
  });

  it('ignores unknown properties: not stored, not echoed', async () => {
    const response = await post({ id: 3, name: 'Cactus', colour: 'green', id2: 5 });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ name: 'Cactus' });
  });

  it('keeps an empty name and tag as given', async () => {
    const response = await post({ id: 4, name: '', tag: '' });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ name: '', tag: '' });
  });

  describe('int64 ids', () => {
    it('stores 9007199254740992 and 9007199254740993 as two plants', async () => {
      expect((await post('{"id": 9007199254740992, "name": "A"}')).status).toBe(200);
      expect((await post('{"id": 9007199254740993, "name": "B"}')).status).toBe(200);
      expect(await storedPlant('9007199254740992')).toEqual({ id: '9007199254740992', name: 'A', tag: null });
      expect(await storedPlant('9007199254740993')).toEqual({ id: '9007199254740993', name: 'B', tag: null });
    });

    it.each(['9223372036854775807', '-9223372036854775808', '0', '-1'])('accepts %s exactly', async (id) => {
      const response = await post(`{"id": ${id}, "name": "edge ${id}"}`);
      expect(response.status).toBe(200);
      expect(await storedPlant(id)).toEqual({ id, name: `edge ${id}`, tag: null });
    });

    it.each(['9223372036854775808', '-9223372036854775809', '1e400', '1.5', '"5"', 'true', 'null', '[1]', '{}'])(
      'refuses %s as an id, naming the field',
      async (id) => {
        const response = await post(`{"id": ${id}, "name": "bad"}`);
        expect(response.status).toBe(400);
        expect(response.body.error).toBe(400);
        expect(response.body.message).toMatch(/\bid\b/);
      },
    );
  });

  describe('duplicates', () => {
    it('answers an identical replay with 200 and stores one plant', async () => {
      const plant = { id: 100, name: 'Ficus', tag: 'tree' };
      expect((await post(plant)).status).toBe(200);
      const replay = await post(plant);
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual({ name: 'Ficus', tag: 'tree' });
      const rows: unknown[] = await t.dataSource.query('SELECT id FROM plant WHERE id = 100');
      expect(rows).toHaveLength(1);
    });

    it.each([{ name: 'Other', tag: 'tree' }, { name: 'Ficus', tag: 'other' }, { name: 'Ficus' }])(
      'refuses a different plant under a taken id with 409 and keeps the stored one (%j)',
      async (different) => {
        const response = await post({ id: 100, ...different });
        expect(response.status).toBe(400);
        expect(response.body).toEqual({ error: 409, message: expect.stringContaining('100') });
        expect(await storedPlant('100')).toEqual({ id: '100', name: 'Ficus', tag: 'tree' });
      },
    );

    it('lets exactly one of many concurrent creates of one id win', async () => {
      const attempts = Array.from({ length: 20 }, (_, i) => post({ id: 200, name: `racer ${i % 4}` }));
      const responses = await Promise.all(attempts);
      const stored = await storedPlant('200');
      expect(stored).toBeDefined();
      for (const [i, response] of responses.entries()) {
        if (`racer ${i % 4}` === stored!.name) {
          expect(response.status).toBe(200);
        } else {
          expect(response.body).toEqual({ error: 409, message: expect.any(String) });
        }
      }
    });
  });

  describe('the NewPlant shape', () => {
    it.each([
      [{ name: 'no id' }, /id is required/],
      [{ id: 10 }, /name is required/],
      [{}, /id is required.*name is required/],
      [{ id: 10, name: 5 }, /name must be a string/],
      [{ id: 10, name: null }, /name/],
      [{ id: 10, name: 'x', tag: null }, /tag must be a string/],
      [{ id: 10, name: 'x', tag: 7 }, /tag must be a string/],
      [{ id: '10', name: 7, tag: false }, /id must be .*name must be a string.*tag must be a string/],
    ])('refuses %j naming every bad field', async (body, message) => {
      const response = await post(body);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 400, message: expect.stringMatching(message) });
    });

    it.each(['[]', '"plant"', '42', 'null', 'true'])('refuses the non-object body %s', async (body) => {
      const response = await post(body);
      expect(response.body).toEqual({ error: 400, message: 'Request body must be a JSON object (NewPlant)' });
    });

    it('does not let __proto__ pollute anything', async () => {
      const response = await post('{"id": 300, "name": "proto", "__proto__": {"tag": "polluted", "isAdmin": true}}');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ name: 'proto' });
      expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    });

    it('keeps the last of repeated keys, as JSON.parse does', async () => {
      const response = await post('{"id": 301, "name": "first", "name": "last"}');
      expect(response.body).toEqual({ name: 'last' });
    });

    it('accepts a charset=utf-8 parameter and keeps non-ASCII text exact', async () => {
      const response = await request(t.server)
        .post('/plants')
        .set('Authorization', `Bearer ${t.token}`)
        .set('Content-Type', 'application/json; charset=UTF-8')
        .send(JSON.stringify({ id: 302, name: 'Strelitzia 🌿', tag: 'ñandú' }));
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ name: 'Strelitzia 🌿', tag: 'ñandú' });
    });
  });
});

describe('the store under test', () => {
  it('is the one this run asked for', async () => {
    const t = await startTestApp();
    try {
      expect(t.dataSource.options.type).toBe(testStoreKind() === 'postgres' ? 'postgres' : 'better-sqlite3');
    } finally {
      await t.close();
    }
  });
});
