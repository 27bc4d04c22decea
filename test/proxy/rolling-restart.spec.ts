import { jest } from '@jest/globals';
import { Agent, request } from 'node:http';
import Database from 'better-sqlite3';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { type Proxy, startProxy } from '../support/haproxy';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { freePort } from '../support/sockets';

jest.setTimeout(180_000);

/** Longer than HAProxy takes to see readiness fail (its check every second, one failure). */
const SHUTDOWN_DELAY_S = 5;
const CLIENTS = 32;

interface Answer {
  status?: number;
  error?: string;
}

function create(agent: Agent, port: number, token: string, id: number): Promise<Answer> {
  const body = JSON.stringify({ id, name: `plant ${id}` });
  return new Promise((resolve) => {
    const sent = request(
      {
        agent,
        port,
        host: '127.0.0.1',
        method: 'POST',
        path: '/plants',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode }));
        response.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
      },
    );
    sent.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    sent.end(body);
  });
}

/** The upgrade of docs/operations.md: each instance stopped (SIGTERM) and started again, one after the other. */
describe('a rolling restart of two instances behind the proxy, under load', () => {
  let database: TestDatabase;
  let token: string;
  let ports: number[];
  const instances = new Map<string, ServerProcess>();
  let proxy: Proxy | undefined;

  const start = async (name: string, port: number): Promise<void> => {
    instances.set(
      name,
      await startServer({
        DATABASE_URL: database.url,
        PORT: String(port),
        TRUST_PROXY: 'loopback',
        SHUTDOWN_DELAY: String(SHUTDOWN_DELAY_S),
      }),
    );
  };

  beforeAll(async () => {
    database = await freshDatabase();
    token = await createToken(database.url, 'rolling');
    ports = [await freePort(), await freePort()];
    await Promise.all([start('a', ports[0]), start('b', ports[1])]);
    proxy = await startProxy(ports[0], ports[1]);
  });
  afterAll(async () => {
    await proxy?.stop();
    await Promise.all([...instances.values()].map(stopServer));
    await database.drop();
  });

  it('answers every request 200 and stores every acknowledged plant', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
    const results = new Map<number, Answer>();
    let next = 5_000_000_000;
    let loading = true;
    const client = async (): Promise<void> => {
      while (loading) {
        const id = next++;
        results.set(id, await create(agent, proxy!.port, token, id));
      }
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, client));
    try {
      for (const [name, port] of [
        ['a', ports[0]],
        ['b', ports[1]],
      ] as const) {
        const old = instances.get(name)!;
        old.child.kill('SIGTERM');
        expect(await old.exited).toBe(0);
        await start(name, port);
        await proxy!.seen(name, 'UP');
      }
    } finally {
      // Also when a restart fails: the load stops, rather than outlive the test.
      loading = false;
      await load;
      agent.destroy();
    }

    const failed = [...results].filter(([, answer]) => answer.status !== 200);
    expect(failed).toEqual([]);
    const store = new Database(database.url.replace(/^sqlite:/, ''), { readonly: true });
    try {
      const stored = store.prepare('SELECT count(*) AS n FROM plant').get() as { n: number };
      expect(stored.n).toBe(results.size);
    } finally {
      store.close();
    }
    expect(results.size).toBeGreaterThan(1_000);
  });
});
