/**
 * @slow 25 s: starts and stops servers of two builds, on each store
 */
import { jest } from '@jest/globals';
import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alterStore, freshDatabase, testStoreKind, type TestDatabase } from '../support/databases';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { run } from '../support/spawn';

jest.setTimeout(120_000);

const ROOT = process.cwd();

type Change = 'compatible' | 'breaking';

/** The test migration each newer build adds: one that only adds, and one named as breaking (not `Expand…`). */
const MIGRATIONS: Record<Change, { name: string; up: string; down: string }> = {
  compatible: {
    name: 'ExpandPlantNote1899999999999',
    up: 'ALTER TABLE "plant" ADD COLUMN "note" text',
    down: 'ALTER TABLE "plant" DROP COLUMN "note"',
  },
  breaking: {
    name: 'RetirePlantArchive1899999999999',
    up: 'CREATE TABLE "plant_archive" ("id" bigint PRIMARY KEY NOT NULL)',
    down: 'DROP TABLE "plant_archive"',
  },
};

interface Build {
  main: string;
  store: string;
  remove(): void;
}

/**
 * A newer build: a copy of today's `dist/` with one more migration for each kind of store, its
 * module beside the others, as the next release would have it.
 */
function newerBuild(change: Change): Build {
  const dir = mkdtempSync(join(tmpdir(), `plant-store-build-${change}-`));
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const migration = MIGRATIONS[change];
  for (const kind of ['sqlite', 'postgres']) {
    writeFileSync(
      join(dir, `dist/database/migrations/${kind}/1899999999999-Test.js`),
      `"use strict";
class TestMigration {
  name = ${JSON.stringify(migration.name)};
  async up(runner) { await runner.query(${JSON.stringify(migration.up)}); }
  async down(runner) { await runner.query(${JSON.stringify(migration.down)}); }
}
exports.TestMigration = TestMigration;
`,
    );
  }
  return {
    main: join(dir, 'dist/main.js'),
    store: join(dir, 'dist/cli/store.js'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

const TODAY = { main: join(ROOT, 'dist/main.js'), store: join(ROOT, 'dist/cli/store.js') };

/**
 * The upgrade steps of docs/operations.md ("Upgrades"), run across two builds on one store: a
 * compatible migration lets old and new serve side by side in either order, and a breaking one
 * waits until no older server runs, after which the older build refuses the store until the
 * newer one has reverted it.
 */
describe(`upgrades across two builds (${testStoreKind()})`, () => {
  let database: TestDatabase;
  let token: string;
  const servers: ServerProcess[] = [];
  const start = async (build: { main: string }): Promise<ServerProcess> => {
    const server = await startServer({ DATABASE_URL: database.url }, 20_000, undefined, 'socket', build.main);
    servers.push(server);
    return server;
  };
  const refusedStart = async (build: { main: string }): Promise<string> => {
    const result = await run(process.execPath, [build.main], {
      DATABASE_URL: database.url,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_FORMAT: 'json',
    });
    expect(result.code).toBe(1);
    const lines = result.stdout.trim().split('\n');
    return (JSON.parse(lines.at(-1)!) as { msg: string }).msg;
  };
  const storeCommand = (build: { store: string }, ...args: string[]) =>
    run(process.execPath, [build.store, ...args], { DATABASE_URL: database.url });
  const create = async (server: ServerProcess, id: number): Promise<number> => {
    const response = await fetch(`${server.url}/plants`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ id, name: 'upgraded', tag: 'kept' }),
    });
    return response.status === 200 ? 200 : ((await response.json()) as { error: number }).error;
  };

  beforeEach(async () => {
    database = await freshDatabase();
    token = await createToken(database.url, 'upgrades');
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await stopServer(server);
    await database.drop();
  });

  it('a compatible migration: the newer build applies it beside a running older one; both serve, and the older one restarts on it', async () => {
    const newer = newerBuild('compatible');
    try {
      const old = await start(TODAY);
      expect(await create(old, 1)).toBe(200);
      const next = await start(newer);
      expect(next.output()).toContain('applied ExpandPlantNote1899999999999');
      expect(await create(next, 2)).toBe(200);
      expect(await create(old, 3)).toBe(200);
      // The older build restarts on the newer store, and its status names what it does not know.
      await stopServer(old);
      const restarted = await start(TODAY);
      expect(await create(restarted, 4)).toBe(200);
      const status = await storeCommand(TODAY, 'status');
      expect(status.stdout).toMatch(
        /\nunknown to this version \(applied by a newer one\): ExpandPlantNote1899999999999\n$/,
      );
      // Going back: the newer build reverts its migration once no server runs, and the older carries on.
      await stopServer(restarted);
      await stopServer(next);
      expect((await storeCommand(newer, 'revert')).stdout).toMatch(/\nreverted: ExpandPlantNote1899999999999\n$/);
      expect(await create(await start(TODAY), 5)).toBe(200);
    } finally {
      newer.remove();
    }
  });

  it('reverting a migration that drops a column with values: refused, saying how many, unless --drop-data', async () => {
    const newer = newerBuild('compatible');
    try {
      expect((await storeCommand(newer, 'migrate')).code).toBe(0);
      await alterStore(
        database.url,
        `INSERT INTO "plant" ("id", "name", "note") VALUES (1, 'noted', 'kept'), (2, 'plain', NULL)`,
      );
      const refused = await storeCommand(newer, 'revert');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(
        /^store: reverting ExpandPlantNote1899999999999 would drop plant\.note \(1 value\) in .+; nothing was changed\. /,
      );
      expect((await storeCommand(newer, 'status')).stdout).toMatch(/applied: .*ExpandPlantNote1899999999999\n/);
      const dropped = await storeCommand(newer, 'revert', '--drop-data');
      expect(dropped.code).toBe(0);
      expect(dropped.stdout).toMatch(/\nreverted: ExpandPlantNote1899999999999\ndropped: plant\.note \(1 value\)\n$/);
    } finally {
      newer.remove();
    }
  });

  it('a breaking migration: not applied while an older server runs; once applied, the older build refuses the store until it is reverted', async () => {
    const newer = newerBuild('breaking');
    try {
      const old = await start(TODAY);
      expect(await create(old, 1)).toBe(200);
      expect(await refusedStart(newer)).toMatch(
        /^DATABASE_URL: cannot open the .*: migration RetirePlantArchive1899999999999 is breaking .*a server is running on this store; stop every instance of the older version first/,
      );
      expect(await create(old, 2)).toBe(200); // the older one never noticed
      const migrate = await storeCommand(newer, 'migrate');
      expect(migrate.code).toBe(2);
      expect(migrate.stderr).toMatch(/^store: migration RetirePlantArchive1899999999999 is breaking /);

      await stopServer(old);
      const next = await start(newer);
      expect(next.output()).toContain('applied RetirePlantArchive1899999999999');
      expect(await refusedStart(TODAY)).toMatch(
        /ahead of this version: it has migration RetirePlantArchive1899999999999, which this version does not know and cannot run beside/,
      );
      expect((await storeCommand(TODAY, 'status')).code).toBe(0);

      await stopServer(next);
      expect((await storeCommand(newer, 'revert')).code).toBe(0);
      const back = await start(TODAY);
      expect(await create(back, 3)).toBe(200);
    } finally {
      newer.remove();
    }
  });
});
