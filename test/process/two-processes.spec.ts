import { freshDatabase, type TestDatabase } from '../support/databases';
import { run } from '../support/spawn';
import { createToken, startServer, stopServer, TOKEN_CLI, type ServerProcess } from '../support/server-process';

async function create(server: ServerProcess, token: string, body: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${server.url}/plants`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body,
  });
  return { status: response.status, body: await response.json() };
}

/** Several instances on one store: the primary key decides every race, across processes too. */
describe(`two server processes on one store (${process.env.TEST_DATABASE_URL ? 'PostgreSQL' : 'SQLite file'})`, () => {
  let database: TestDatabase;
  let databaseUrl: string;
  let token: string;
  let servers: ServerProcess[];

  beforeAll(async () => {
    database = await freshDatabase();
    databaseUrl = database.url;
    token = await createToken(databaseUrl, 'racer');
    servers = await Promise.all([0, 1].map(() => startServer({ DATABASE_URL: databaseUrl })));
  });
  afterAll(async () => {
    await Promise.all((servers ?? []).map(stopServer));
    await database.drop();
  });

  it('gives each contested id exactly one winner; every loser gets 409, never a 500 or 503', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => 9007199254740000 + i);
    const attempts = ids.flatMap((id) =>
      [0, 1, 2, 3].map(async (contender) => ({
        id,
        contender,
        ...(await create(servers[contender % 2], token, `{"id": ${id}, "name": "contender ${contender}"}`)),
      })),
    );
    const results = await Promise.all(attempts);
    for (const id of ids) {
      const forId = results.filter((result) => result.id === id);
      const winners = forId.filter((result) => result.status === 200);
      expect(winners).toHaveLength(1);
      for (const loser of forId.filter((result) => result.status !== 200)) {
        expect(loser.body).toEqual({ error: 409, message: expect.any(String) });
      }
      // The winner's plant is the stored one: replaying it through either process is a 200.
      const winner = winners[0];
      for (const server of servers) {
        expect((await create(server, token, `{"id": ${id}, "name": "contender ${winner.contender}"}`)).status).toBe(
          200,
        );
      }
    }
  });

  it('decides 40-way races through both processes: one plant wins each id, every other answer 200 or 409', async () => {
    const ids = Array.from({ length: 10 }, (_, i) => 8_000_000 + i);
    const results = await Promise.all(
      ids.flatMap((id) =>
        Array.from({ length: 40 }, async (_, contender) => {
          // Four different plants per id, each sent by ten contenders: a contender that sent the
          // winning plant gets 200 (created or replayed), the others 409.
          const name = `racer ${contender % 4}`;
          return { id, name, ...(await create(servers[contender % 2], token, `{"id": ${id}, "name": "${name}"}`)) };
        }),
      ),
    );
    expect(
      results.filter((result) => result.status !== 200 && (result.body as { error?: number }).error !== 409),
    ).toEqual([]);
    for (const id of ids) {
      const winners = new Set(results.filter((result) => result.id === id && result.status === 200).map((r) => r.name));
      expect(winners.size).toBe(1);
    }
  });

  it('refuses a token revoked through the CLI in both processes on the next request', async () => {
    const other = await createToken(databaseUrl, 'revoked-racer');
    for (const server of servers) expect((await create(server, other, '{"id": 1, "name": "a"}')).status).toBe(200);
    const revoked = await run(process.execPath, [TOKEN_CLI, 'revoke', 'revoked-racer'], { DATABASE_URL: databaseUrl });
    expect(revoked.code).toBe(0);
    for (const server of servers) {
      expect(await create(server, other, '{"id": 1, "name": "a"}')).toEqual({
        status: 400,
        body: { error: 401, message: expect.any(String) },
      });
    }
  });
});

describe('instances starting together on a fresh store', () => {
  it('all come up: the migrations run once, whoever wins the race', async () => {
    const database = await freshDatabase();
    const started = await Promise.allSettled([0, 1, 2].map(() => startServer({ DATABASE_URL: database.url })));
    try {
      expect(started.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    } finally {
      await Promise.all(
        started.map((result) => (result.status === 'fulfilled' ? stopServer(result.value) : Promise.resolve())),
      );
      await database.drop();
    }
  });
});
