import { isDeepStrictEqual } from 'node:util';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { startTestApp, type TestApp } from './support/app';
import { schemaValidators } from './support/openapi-validator';

const committed: unknown = JSON.parse(readFileSync(join(process.cwd(), 'openapi/plant-store.openapi.json'), 'utf8'));

describe('the OpenAPI document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('is served at /docs-json without a token and equals openapi/plant-store.openapi.json', async () => {
    const response = await request(t.server).get('/docs-json');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    if (!isDeepStrictEqual(response.body, committed)) {
      throw new Error('openapi/plant-store.openapi.json is not the document the code serves: run npm run generate');
    }
  });

  it('is served as YAML at /docs-yaml, and Swagger UI at /docs', async () => {
    const yaml = await request(t.server).get('/docs-yaml');
    expect(yaml.status).toBe(200);
    expect(yaml.text).toMatch(/^openapi: 3\.1\.0$/m);
    const ui = await request(t.server).get('/docs');
    expect(ui.status).toBe(200);
    expect(ui.text).toMatch(/swagger-ui/i);
  });

  // The operations an engineer adds take their place beside it: no path list is pinned here (the
  // committed document, regenerated with them, is the list).
  it('describes the create as the contract fixes it', async () => {
    const doc = (await request(t.server).get('/docs-json')).body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.info.license.name).toBe('MIT');
    const op = doc.paths['/plants'].post;
    expect(op.operationId).toBe('createPlant');
    expect(op.requestBody.required).toBe(true);
    expect(op.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/NewPlant' });
    expect(Object.keys(op.responses).sort()).toEqual(['200', '400']);
    expect(op.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Plant' });
    expect(op.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(op.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.bearerAuth.bearerFormat).toBeUndefined();

    const { Plant, NewPlant, Error: ErrorSchema } = doc.components.schemas;
    expect(Plant.required).toEqual(['name']);
    expect(Object.keys(Plant.properties).sort()).toEqual(['name', 'tag']);
    // Plant plus a required int64 id, written out flat.
    expect(NewPlant.required).toEqual(['id', ...Plant.required]);
    expect(NewPlant.properties.id).toMatchObject({ type: 'integer', format: 'int64' });
    expect(NewPlant.properties).toEqual({ id: NewPlant.properties.id, ...Plant.properties });
    expect(ErrorSchema.required).toEqual(['error', 'message']);
    expect(ErrorSchema.properties.error).toMatchObject({ type: 'integer', format: 'int32' });
    expect(ErrorSchema.properties.message).toMatchObject({ type: 'string' });
    // Written out, not read from the table the document is built from, so that a code lost on
    // the way (or added by mistake) fails here.
    expect(ErrorSchema.properties.error.enum).toEqual([400, 401, 404, 405, 409, 413, 415, 417, 429, 431, 500, 503]);
    for (const field of ['name', 'tag'])
      expect(Plant.properties[field].description).toMatch(/U\+0000.*unpaired surrogates/);
  });

  it('names a server and a contact', async () => {
    const doc = (await request(t.server).get('/docs-json')).body;
    expect(doc.servers).toEqual([
      { url: '/', description: expect.any(String) },
      { url: 'http://localhost:3000', description: expect.any(String) },
    ]);
    expect(doc.info.contact).toEqual({ name: expect.any(String) });
  });

  it('leaves the 405 catch-all route out', async () => {
    const doc = (await request(t.server).get('/docs-json')).body;
    expect(JSON.stringify(doc)).not.toMatch(/methodNotAllowed/);
  });

  it('has schemas that real answers satisfy', async () => {
    const doc = (await request(t.server).get('/docs-json')).body;
    const schema = schemaValidators(doc);
    const [plant, error] = [schema('Plant'), schema('Error')];
    const ok = await request(t.server)
      .post('/plants')
      .set('Authorization', `Bearer ${t.token}`)
      .send({ id: 1, name: 'a', tag: 'b' });
    expect(plant(ok.body)).toBe(true);
    const bad = await request(t.server).post('/plants').send({});
    expect(error(bad.body)).toBe(true);
    expect(error({ error: 2 ** 31, message: 'x' })).toBe(false); // the oracle can say no
  });
});
