/**
 * @slow 6 s: starts and stops servers
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testStoreKind } from '../support/databases';
import { createToken, startServer, stopServer } from '../support/server-process';

// These read the SQLite file directly; under `npm run test:postgres` they have nothing to add.
const describeOnSqlite = testStoreKind() === 'sqlite' ? describe : describe.skip;

describeOnSqlite('the server process', () => {
  let dir: string;
  let databaseUrl: string;
  let dbPath: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-proc-'));
    dbPath = join(dir, 'nested', 'store.sqlite');
    databaseUrl = `sqlite:${dbPath}`;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates the SQLite folder, answers, and logs JSON lines without the token', async () => {
    const token = await createToken(databaseUrl, 'lifecycle');
    const server = await startServer({ DATABASE_URL: databaseUrl });
    try {
      const response = await fetch(`${server.url}/plants?access_token=${token}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: '{"id": 1, "name": "first"}',
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: 'first' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const lines = server.output().trim().split('\n');
      for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
      const requestLog = lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((entry) => entry.req !== undefined);
      expect(requestLog).toMatchObject({
        req: { method: 'POST', path: '/plants' },
        res: { status: 200 },
        requestId: response.headers.get('x-request-id'),
        durationMs: expect.any(Number),
      });
      expect(server.output()).not.toContain(token);
      expect(server.output()).not.toContain(token.slice(4));
      expect(server.output()).not.toMatch(/authorization/i);
    } finally {
      await stopServer(server);
    }
  });
});
