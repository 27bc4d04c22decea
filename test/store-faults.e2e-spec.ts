import { jest } from '@jest/globals';
import pg from 'pg';
import request from 'supertest';
import { alterStore, freshDatabase, onPostgres, testStoreKind } from './support/databases';
import { byTestingModule, startTestApp, type TestApp } from './support/app';
import { TokensService } from '../src/auth/tokens.service';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/configuration';
import { createRootLogger } from '../src/observability/logger';
import type { Server } from 'node:http';
import { sleep } from './support/sockets';
import { RECOVERY_CHECK_MS } from '../src/database/store-outage';
import { Metrics } from '../src/observability/metrics';

jest.setTimeout(30_000);

const onSqlite = testStoreKind() === 'sqlite';
const viaPooler = process.env.TEST_POOLER_URL !== undefined;

/** The same database, reached directly as the admin user (never through the pooler). */

/** Ends every session on the database, as a failover or a restart does: new ones see its settings. */
function endSessions(client: pg.Client, name: string): Promise<unknown> {
  return client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
}

function create(server: Server, token: string, id: number) {
  return request(server).post('/plants').set('Authorization', `Bearer ${token}`).send({ id, name: 'through a fault' });
}

/** Polls `path` (and nothing else: no create is sent) until it answers 200 (how soon: store-outage.spec). */
async function readyAgain(server: Server, path = '/health/ready', withinMs = 30_000): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < withinMs) {
    if ((await request(server).get(path)).status === 200) return;
    await sleep(50);
  }
  throw new Error(`${path} did not answer 200 within ${withinMs} ms`);
}

const outageLines = (log: string[], what: 'started' | 'ended') =>
  log.filter((line) => line.includes(`store outage ${what}`)).length;

/**
 * A store that answers but cannot take creates (its table gone, a read-only database, a missing
 * privilege) is down: creates answer 503, never 500; the probes say so without waiting for a
 * create; the outage is logged once each way, and ends by itself, with no create sent, within
 * 2 s of the store taking writes again.
 */
describe('a store that answers but cannot take creates', () => {
  let t: TestApp;
  const log: string[] = [];
  let id = 1;
  beforeEach(async () => {
    log.length = 0;
    t = await startTestApp({ METRICS_PORT: '0' }, { log });
  });
  afterEach(async () => {
    await t.close();
  });

  it('with its plant table gone: 503 for creates, probes down at once, and back by itself', async () => {
    expect((await create(t.server, t.token, id++)).status).toBe(200);
    await alterStore(t.databaseUrl, 'ALTER TABLE "plant" RENAME TO "plant_away"');

    // The probes see it before any create does.
    expect((await request(t.server).get('/health')).status).toBe(503);
    expect((await request(t.server).get('/health/ready')).status).toBe(503);
    expect((await request(t.server).get('/health/live')).status).toBe(200);
    const refused = await create(t.server, t.token, id++);
    expect(refused.body).toEqual({ error: 503, message: 'The store is unavailable; try again shortly' });
    expect(outageLines(log, 'started')).toBe(1);

    await alterStore(t.databaseUrl, 'ALTER TABLE "plant_away" RENAME TO "plant"');
    await readyAgain(t.server);
    expect((await request(t.server).get('/health')).status).toBe(200);
    expect(outageLines(log, 'ended')).toBe(1);
    expect((await create(t.server, t.token, id++)).status).toBe(200);
    expect(log.some((line) => line.includes('"status":500') || line.includes('"error":500'))).toBe(false);
  });

  it('after an outage met by creates, back with no create sent, and so is plant_store_store_up', async () => {
    const storeUp = async () => /^plant_store_store_up (\d)$/m.exec(await t.app.get(Metrics).registry!.metrics())?.[1];
    await alterStore(t.databaseUrl, 'ALTER TABLE "plant" RENAME TO "plant_away"');
    for (let i = 0; i < 3; i++) expect((await create(t.server, t.token, id++)).body).toMatchObject({ error: 503 });
    expect(await storeUp()).toBe('0');
    await alterStore(t.databaseUrl, 'ALTER TABLE "plant_away" RENAME TO "plant"');
    // Nothing at all from here on: no create, no probe, as a balancer that took the instance out.
    // The store's own look (every RECOVERY_CHECK_MS) finds it back: given twenty looks, far past any
    // load's delay and inside this file's 30 s, so that a failure ends with its own message. The
    // metric is read in-process.
    for (let looks = 0; looks < 20 && (await storeUp()) !== '1'; looks++) await sleep(RECOVERY_CHECK_MS);
    expect(await storeUp()).toBe('1');
    // The very first probe says so: the outage ended before anyone asked. (Not how long the
    // probe took: under a loaded machine one request can take a few hundred milliseconds.)
    expect((await request(t.server).get('/health/ready')).status).toBe(200);
    expect(outageLines(log, 'started')).toBe(1);
    expect(outageLines(log, 'ended')).toBe(1);
  });

  (onSqlite ? it.skip : it)('on a read-only PostgreSQL (a standby, or a pooler pointed at one)', async () => {
    const name = new URL(t.databaseUrl).pathname.slice(1);
    // From the admin's own database: a session on this one would be read-only too.
    await onPostgres(process.env.TEST_DATABASE_URL!, async (client) => {
      await client.query(`ALTER DATABASE "${name}" SET default_transaction_read_only = on`);
      await endSessions(client, name);
    });
    const refused = await create(t.server, t.token, id++);
    expect(refused.body).toEqual({ error: 503, message: 'The store is unavailable; try again shortly' });
    expect((await request(t.server).get('/health')).status).toBe(503);
    expect((await request(t.server).get('/health/ready')).status).toBe(503);

    await onPostgres(process.env.TEST_DATABASE_URL!, async (client) => {
      await client.query(`ALTER DATABASE "${name}" RESET default_transaction_read_only`);
      await endSessions(client, name);
    });
    await readyAgain(t.server);
    expect((await create(t.server, t.token, id++)).status).toBe(200);
    expect(outageLines(log, 'started')).toBe(1);
    expect(outageLines(log, 'ended')).toBe(1);
  });
});

/**
 * The service's PostgreSQL user loses the right to insert (a REVOKE by mistake, a role rotated).
 * Not through the test pooler, whose user list has the admin alone.
 */
(onSqlite || viaPooler ? describe.skip : describe)('a PostgreSQL user without the right to insert', () => {
  it('answers creates 503 and fails the probes until the right comes back', async () => {
    const database = await freshDatabase();
    const role = `plant_store_writer_${Math.random().toString(36).slice(2, 8)}`;
    await onPostgres(database.url, async (client) => {
      await client.query(`CREATE ROLE "${role}" LOGIN`);
      await client.query(`GRANT ALL ON SCHEMA public TO "${role}"`);
    });
    const url = new URL(database.url);
    url.username = role;
    const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: url.toString() });
    const { app, server } = await createApp(byTestingModule(config, createRootLogger('silent')));
    try {
      const token = await app.get(TokensService).create('writer');
      expect((await create(server, token, 1)).status).toBe(200);

      await onPostgres(database.url, (client) => client.query(`REVOKE INSERT ON "plant" FROM "${role}"`));
      expect((await request(server).get('/health/ready')).status).toBe(503);
      expect((await create(server, token, 2)).body).toEqual({
        error: 503,
        message: 'The store is unavailable; try again shortly',
      });

      await onPostgres(database.url, (client) => client.query(`GRANT INSERT ON "plant" TO "${role}"`));
      await readyAgain(server);
      expect((await create(server, token, 3)).status).toBe(200);
    } finally {
      await app.close();
      await database.drop();
      await onPostgres(process.env.TEST_DATABASE_URL!, (client) => client.query(`DROP ROLE IF EXISTS "${role}"`));
    }
  });
});
