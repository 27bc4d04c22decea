import { jest } from '@jest/globals';
import Database from 'better-sqlite3';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { type Proxy, startProxy } from '../support/haproxy';
import { answers, createRequest, exchange } from '../support/raw-http';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { freePort } from '../support/sockets';

jest.setTimeout(120_000);

const STORM = 3_000;

/** 3,000 new connections at once, through the recipe's HAProxy to two instances: each answered. */
describe('a storm of connections through the proxy', () => {
  let database: TestDatabase;
  let token: string;
  let instances: ServerProcess[] = [];
  let proxy: Proxy | undefined;

  beforeAll(async () => {
    database = await freshDatabase();
    token = await createToken(database.url, 'storm');
    const ports = [await freePort(), await freePort()];
    instances = await Promise.all(
      ports.map((port) => startServer({ DATABASE_URL: database.url, PORT: String(port), TRUST_PROXY: 'loopback' })),
    );
    proxy = await startProxy(ports[0], ports[1]);
  });
  afterAll(async () => {
    await proxy?.stop();
    await Promise.all(instances.map(stopServer));
    await database.drop();
  });

  it(`answers every one of ${STORM} creates sent at once on new connections, and stores each`, async () => {
    const base = 7_000_000_000;
    const exchanges = await Promise.all(
      Array.from({ length: STORM }, (_, i) =>
        exchange(proxy!.port, createRequest(token, base + i, `storm ${i}`, 'close')),
      ),
    );
    const failed = exchanges
      .map(({ reply, error }, i) => ({ i, error, codes: answers(reply).map((answer) => answer.code) }))
      .filter(({ error, codes }) => error !== undefined || codes.join() !== '200');
    expect(failed).toEqual([]);
    const store = new Database(database.url.replace(/^sqlite:/, ''), { readonly: true });
    try {
      expect(store.prepare('SELECT count(*) AS n FROM plant').get()).toEqual({ n: STORM });
    } finally {
      store.close();
    }
  });
});
