import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from './support/sockets';
import request from 'supertest';
import { ApiTokenEntity } from '../src/auth/api-token.entity';
import { generateToken, hashToken } from '../src/auth/bearer-auth';
import { Metrics } from '../src/observability/metrics';
import { startTestApp, type TestApp } from './support/app';

/** Debian's redis-server on `port`, keeping nothing on disk; resolves once it accepts connections. */
async function startRedis(port: number): Promise<ChildProcess> {
  const redis = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let seen = '';
  for await (const chunk of redis.stdout) {
    seen += String(chunk);
    if (seen.includes('Ready to accept connections')) break;
  }
  redis.stdout.resume();
  return redis;
}

const hasRedis = spawnSync('redis-server', ['--version']).error === undefined;

/**
 * RATE_LIMIT_REDIS_URL: one count per token for every process of the fleet (two apps here, as
 * two instances would be), and what happens while Redis is gone.
 */
(hasRedis || process.env.CI === 'true' ? describe : describe.skip)('RATE_LIMIT with RATE_LIMIT_REDIS_URL', () => {
  let redis: ChildProcess;
  let port: number;
  let apps: TestApp[];
  const logs: string[][] = [[], []];
  // passport keeps one `bearer` strategy per process: both stores hold the same token.
  const token = generateToken();

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    const env = { RATE_LIMIT: '3', RATE_LIMIT_REDIS_URL: `redis://127.0.0.1:${port}`, METRICS_PORT: '0' };
    apps = await Promise.all(logs.map((log) => startTestApp(env, { log })));
    for (const app of apps) {
      await app.dataSource.getRepository(ApiTokenEntity).insert({
        name: 'fleet-client',
        tokenHash: hashToken(token),
        createdAt: new Date().toISOString(),
        revokedAt: null,
      });
    }
  });
  afterAll(async () => {
    await Promise.all((apps ?? []).map((app) => app.close()));
    if (redis.exitCode === null && redis.signalCode === null) {
      redis.kill('SIGKILL');
      await once(redis, 'exit');
    }
  });

  let id = 1;
  const create = (app: TestApp) =>
    request(app.server)
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/json')
      .send({ id: id++, name: 'counted' });
  const warnings = (log: string[]) =>
    log.filter((line) => line.includes('"context":"RateLimit"') && line.includes('"level":40'));

  it('counts every instance against one limit, then lets requests through while Redis is gone, and limits again once it is back', async () => {
    const [a, b] = apps;
    expect((await create(a)).status).toBe(200);
    expect((await create(b)).status).toBe(200);
    expect((await create(a)).status).toBe(200);
    const refused = await create(b); // the fourth in the minute, fleet-wide
    expect(refused.body).toEqual({ error: 429, message: expect.stringContaining('at most 3 requests per minute') });
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);

    redis.kill('SIGKILL');
    await once(redis, 'exit');
    for (let i = 0; i < 4; i++) expect((await create(i % 2 === 0 ? a : b)).status).toBe(200);
    // Said once by each instance (Nest's logger writes both apps' lines to one of the logs), and counted.
    expect(logs.flatMap(warnings)).toHaveLength(2);
    const scrape = await a.app.get(Metrics).registry!.metrics();
    expect(Number(/^plant_store_rate_limit_store_errors_total (\d+)/m.exec(scrape)?.[1])).toBeGreaterThanOrEqual(2);

    redis = await startRedis(port);
    // ioredis reconnects within its backoff (at most 2 s); from then on requests count again.
    const deadline = Date.now() + 10_000;
    let status = 200;
    while (status !== 429 && Date.now() < deadline) {
      status = (await create(a)).status === 200 ? 200 : 429;
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(429);
    expect(logs.flat().some((line) => line.includes('the rate limit store answers again'))).toBe(true);
  });
});
