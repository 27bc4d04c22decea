import request from 'supertest';
import { StoreOutage } from '../src/database/store-outage';
import { StoreUnavailableError } from '../src/errors/api-error';
import { Metrics } from '../src/observability/metrics';
import { startTestApp, type TestApp } from './support/app';

describe('GET /health', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ METRICS_PORT: '0' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 200 without a token while the store answers', async () => {
    const response = await request(t.server).get('/health');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'ok', info: { store: { status: 'up' } } });
    expect(response.headers['x-request-id']).toBeDefined();
  });

  it('is not in the OpenAPI document', async () => {
    const doc = (await request(t.server).get('/docs-json')).body;
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/health'))).toEqual([]);
  });

  it('answers 503 while a store outage is in progress, though the store still answers a ping; so do readiness and the metrics', async () => {
    const outage = t.app.get(StoreOutage);
    const storeUp = async () => /^plant_store_store_up (\d)$/m.exec(await t.app.get(Metrics).registry!.metrics())?.[1];
    expect(await storeUp()).toBe('1');
    outage.failed(new StoreUnavailableError('SQLITE_FULL'));
    try {
      const response = await request(t.server).get('/health');
      expect(response.status).toBe(503);
      expect(response.body).toMatchObject({ status: 'error', error: { store: { status: 'down' } } });
      expect((await request(t.server).get('/health/ready')).status).toBe(503);
      expect((await request(t.server).get('/health/live')).status).toBe(200);
      expect(await storeUp()).toBe('0');
    } finally {
      outage.recovered();
    }
    expect((await request(t.server).get('/health')).status).toBe(200);
    expect((await request(t.server).get('/health/ready')).status).toBe(200);
    expect(await storeUp()).toBe('1');
  });

  it.each(['/health', '/health/live', '/health/ready'])('answers any method but GET on %s with 405', async (path) => {
    const response = await request(t.server).delete(path);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 405, message: `Method not allowed on ${path}; use GET` });
    expect(response.headers.allow).toBe('GET');
  });

  it('answers a real 503 while the store does not answer', async () => {
    await t.dataSource.destroy();
    try {
      const response = await request(t.server).get('/health');
      expect(response.status).toBe(503);
      // Whether the store answers, never why not: the driver's text stays in the log.
      expect(response.body).toEqual({
        status: 'error',
        info: {},
        error: { store: { status: 'down' } },
        details: { store: { status: 'down' } },
      });
    } finally {
      await t.dataSource.initialize();
    }
  });
});

describe('X-Request-Id', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('is on every response, and is the client’s own when it sent a sane one', async () => {
    for (const path of ['/plants', '/nope', '/docs-json', '/health']) {
      const response = await request(t.server).get(path);
      expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
    const own = await request(t.server).get('/health').set('X-Request-Id', 'trace-abc.123');
    expect(own.headers['x-request-id']).toBe('trace-abc.123');
    const insane = await request(t.server).get('/health').set('X-Request-Id', 'x'.repeat(500));
    expect(insane.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
