/**
 * @slow 6 s: 800 connections held to a server with 1,024 descriptors
 */
import { freshDatabase, type TestDatabase } from '../support/databases';
import { createToken, startServerWithDescriptors, stopServer } from '../support/server-process';
import { open, sleep } from '../support/sockets';

/**
 * A process exposed directly, with few descriptors: it keeps serving the connections it holds,
 * liveness answers 200 whatever their number, the store's own connections are never starved
 * (a PostgreSQL pool opens its connections past the clients'), and the start says once what to
 * raise. Past the limit is the proxy's (its `maxconn`).
 */
describe('a server with 1,024 descriptors and 800 idle connections', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(() => database.drop());

  it('says at start what to raise, answers liveness 200 and creates 200, and stays ready', async () => {
    const token = await createToken(database.url, 'descriptors');
    const server = await startServerWithDescriptors({ DATABASE_URL: database.url }, 1024);
    const held = await Promise.all(Array.from({ length: 800 }, () => open(server.port)));
    try {
      const warning = server
        .output()
        .split('\n')
        .find((line) => line.includes('"context":"Connections"'));
      expect(warning).toContain('the descriptor limit is 1024, below the 4160 that MAX_IN_FLIGHT=4096 needs: raise it');
      await sleep(200);
      expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
      for (let id = 1; id <= 20; id++) {
        const response = await fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Connection: 'close' },
          body: JSON.stringify({ id, name: 'held' }),
        });
        expect(await response.json()).toEqual({ name: 'held' });
      }
      expect((await fetch(`${server.url}/health/ready`)).status).toBe(200);
      expect(server.output()).not.toContain('store outage started');
    } finally {
      held.forEach((socket) => socket.destroy());
      await stopServer(server);
    }
  });
});
