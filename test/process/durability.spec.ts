import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { testStoreKind } from '../support/databases';
import { createToken, startServer, stopServer, type ServerProcess } from '../support/server-process';

// These read the SQLite file directly; under `npm run test:postgres` they have nothing to add.
const describeOnSqlite = testStoreKind() === 'sqlite' ? describe : describe.skip;

interface Acked {
  id: string;
  name: string;
  tag?: string;
}

/** Creates plants with unique ids from several connections until stopped; records every 200. */
async function writeUntilKilled(server: ServerProcess, token: string, workers: number, acked: Acked[]): Promise<void> {
  let next = 0n;
  const worker = async (w: number): Promise<void> => {
    for (;;) {
      // Ids above 2^53 with their neighbours, so precision loss would show as a wrong row.
      const id = (2n ** 53n + next++).toString();
      const plant: Acked = w % 2 === 0 ? { id, name: `plant ${id}` } : { id, name: `plant ${id}`, tag: `t${w}` };
      const body = `{"id": ${id}, "name": ${JSON.stringify(plant.name)}${plant.tag ? `, "tag": "${plant.tag}"` : ''}}`;
      let response: Response;
      try {
        response = await fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body,
        });
      } catch {
        return; // the server is gone
      }
      if (response.status === 200) acked.push(plant);
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
}

describeOnSqlite('durability', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-crash-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps every acknowledged create, exactly, through kill -9 and a restart', async () => {
    const dbPath = join(dir, 'store.sqlite');
    const databaseUrl = `sqlite:${dbPath}`;
    const token = await createToken(databaseUrl, 'crash');
    const server = await startServer({ DATABASE_URL: databaseUrl });
    const acked: Acked[] = [];
    const writing = writeUntilKilled(server, token, 16, acked);
    // Killed mid-stream once there is something to lose (however slow the machine is today).
    const deadline = Date.now() + 20_000;
    while (acked.length < 200 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    server.child.kill('SIGKILL');
    await writing;
    await server.exited;
    expect(acked.length).toBeGreaterThan(50);

    // Restart on the same file: it must come up and still hold every acknowledged plant.
    const restarted = await startServer({ DATABASE_URL: databaseUrl });
    try {
      for (const plant of acked.slice(0, 20)) {
        const replay = await fetch(`${restarted.url}/plants`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: `{"id": ${plant.id}, "name": ${JSON.stringify(plant.name)}${plant.tag ? `, "tag": "${plant.tag}"` : ''}}`,
        });
        expect(replay.status).toBe(200); // identical replay: the stored plant is this one
      }
    } finally {
      await stopServer(restarted);
    }
    const db = new Database(dbPath, { readonly: true });
    db.defaultSafeIntegers(true);
    try {
      const rows = db.prepare('SELECT CAST(id AS TEXT) AS id, name, tag FROM plant').all() as {
        id: string;
        name: string;
        tag: string | null;
      }[];
      const stored = new Map(rows.map((row) => [row.id, row]));
      for (const plant of acked) {
        expect(stored.get(plant.id)).toEqual({ id: plant.id, name: plant.name, tag: plant.tag ?? null });
      }
    } finally {
      db.close();
    }
  });
});
