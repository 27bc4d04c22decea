import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import request from 'supertest';
import { startTestApp } from '../support/app';
import { freshDatabase, testStoreKind, type TestDatabase } from '../support/databases';
import { startServer, stopServer } from '../support/server-process';
import { run } from '../support/spawn';
import { migrationNames } from '../support/migrations';

const ROOT = process.cwd();
/** The migrations, in order: the same names for both kinds of store (migrations.spec holds it). */
const NAMES = migrationNames();
const ALL = NAMES.join(', ');

/**
 * `node dist/cli/store.js status|migrate|revert`, on whichever store the suite runs on, from the
 * build, with every dev dependency refused (no ts-node, no TypeScript): what an operator has
 * after `npm ci --omit=dev`.
 */
describe('node dist/cli/store.js', () => {
  let database: TestDatabase;
  const store = (...args: string[]) =>
    run(
      process.execPath,
      ['--import', join(ROOT, 'test/support/forbid-dev-dependencies.mjs'), join(ROOT, 'dist/cli/store.js'), ...args],
      { DATABASE_URL: database.url },
    );

  beforeEach(async () => {
    database = await freshDatabase();
  });
  afterEach(async () => {
    await database.drop();
  });

  it('shows a fresh store with its migration pending, applies it, and reverts it', async () => {
    const before = await store('status');
    expect(before.stderr).toBe('');
    expect(before.code).toBe(0);
    expect(before.stdout).toMatch(
      new RegExp(`^store: (SQLite file|PostgreSQL at) .+\napplied: none\npending: ${ALL}\n$`),
    );

    const migrated = await store('migrate');
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(new RegExp(`\napplied now: ${ALL}\n$`));
    expect((await store('status')).stdout).toMatch(new RegExp(`\napplied: ${ALL}\npending: none\n$`));
    expect((await store('migrate')).stdout).toMatch(/\napplied now: none\n$/);

    // Each revert undoes the last applied migration, until none is left.
    for (let applied = NAMES.length; applied > 0; applied--) {
      const reverted = await store('revert');
      expect(reverted.code).toBe(0);
      expect(reverted.stdout).toMatch(new RegExp(`\nreverted: ${NAMES[applied - 1]}\n$`));
      expect((await store('status')).stdout).toMatch(
        new RegExp(
          `\napplied: ${NAMES.slice(0, applied - 1).join(', ') || 'none'}\npending: ${NAMES.slice(applied - 1).join(', ')}\n$`,
        ),
      );
    }

    const nothing = await store('revert');
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/^store: .+ has no migration to revert\n$/);
  });

  it('refuses to revert a migration whose tables hold rows, saying what would be lost, unless told --drop-data', async () => {
    expect((await store('migrate')).code).toBe(0);
    const token = await run(process.execPath, [join(ROOT, 'dist/cli/token.js'), 'create', 'kept'], {
      DATABASE_URL: database.url,
    });
    expect(token.code).toBe(0);
    const imported = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [join(ROOT, 'dist/cli/plants.js'), 'import', '-'], {
        env: { ...process.env, DATABASE_URL: database.url },
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      child.on('close', resolve);
      child.stdin.end('{"id":1,"name":"kept"}\n{"id":2,"name":"kept"}\n');
    });
    expect(imported).toBe(0);
    // Down to the first migration, whose revert drops the tables themselves.
    for (let applied = NAMES.length; applied > 1; applied--)
      expect((await store('revert', '--drop-data')).code).toBe(0);

    const refused = await store('revert');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^store: reverting CreatePlantStore\w+ would drop api_token \(1 row\), plant \(2 rows\) in .+; nothing was changed\. .*node dist\/cli\/store\.js revert --drop-data\n$/,
    );
    expect((await store('status')).stdout).toMatch(new RegExp(`\napplied: ${NAMES[0]}\npending: `));

    const dropped = await store('revert', '--drop-data');
    expect(dropped.code).toBe(0);
    expect(dropped.stdout).toMatch(
      /\nreverted: CreatePlantStore\w+\ndropped: api_token \(1 row\)\ndropped: plant \(2 rows\)\n$/,
    );
    expect((await store('status')).stdout).toMatch(new RegExp(`\napplied: none\npending: ${ALL}\n$`));
    expect((await store('revert', '--force')).code).toBe(2);
  });

  it('refuses to revert while a server runs on the store, and reverts once it has gone (however it went)', async () => {
    expect((await store('migrate')).code).toBe(0);
    const server = await startServer({ DATABASE_URL: database.url });
    try {
      const refused = await store('revert');
      expect(refused.stderr).toBe(
        "store: a server is running on this store (it holds the store's server lock); stop every instance first\n",
      );
      expect(refused.code).toBe(2);
      expect((await store('status')).stdout).toMatch(new RegExp(`\napplied: ${ALL}\npending: none\n$`));
      if (testStoreKind() === 'postgres' && process.env.TEST_POOLER_URL === undefined) {
        // Its lock's connection lost (a restart, a failover, an administrator): made again.
        const admin = new URL(process.env.TEST_DATABASE_URL!);
        admin.pathname = new URL(database.url).pathname;
        const client = new pg.Client({ connectionString: admin.toString() });
        await client.connect();
        try {
          const ended = await client.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'plant-store-server-lock' AND datname = current_database()",
          );
          expect(ended.rowCount).toBe(1);
        } finally {
          await client.end();
        }
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect((await store('revert')).code).toBe(2);
      }
    } finally {
      // Killed outright, it holds nothing either: the lock goes with its process.
      await stopServer(server);
    }
    const reverted = await store('revert');
    expect(reverted.stderr).toBe('');
    expect(reverted.code).toBe(0);
  });

  it('answers a wrong command with its usage (exit 2)', async () => {
    const wrong = await store('upgrade');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/^store: usage: node dist\/cli\/store\.js <command>/);
  });

  it('backs up a SQLite store while the server holds it: every plant (WAL too), 0600, never over a file; on PostgreSQL it names pg_dump', async () => {
    const app = await startTestApp();
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-backup-'));
    try {
      for (let id = 1; id <= 23; id++) {
        const created = await request(app.server)
          .post('/plants')
          .set('Authorization', `Bearer ${app.token}`)
          .send({ id, name: `kept ${id}` });
        expect(created.status).toBe(200);
      }
      const file = join(dir, 'backup.sqlite');
      const backup = await run(process.execPath, [join(ROOT, 'dist/cli/store.js'), 'backup', file], {
        DATABASE_URL: app.databaseUrl,
      });
      if (testStoreKind() === 'postgres') {
        expect(backup.code).toBe(2);
        expect(backup.stderr).toMatch(/^store: a PostgreSQL store is backed up with PostgreSQL's own tools: pg_dump /);
        return;
      }
      expect(backup.stderr).toBe('');
      expect(backup.code).toBe(0);
      expect(backup.stdout).toMatch(/\nbacked up to: .*backup\.sqlite\n$/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const copy = await run(process.execPath, [join(ROOT, 'dist/cli/plants.js'), 'export'], {
        DATABASE_URL: `sqlite:${file}`,
      });
      expect(copy.stdout.trim().split('\n')).toHaveLength(23);
      const again = await run(process.execPath, [join(ROOT, 'dist/cli/store.js'), 'backup', file], {
        DATABASE_URL: app.databaseUrl,
      });
      expect(again.code).toBe(2);
      expect(again.stderr).toBe(`store: ${file} exists: a backup goes to a new file\n`);
    } finally {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  (testStoreKind() === 'sqlite' ? it : it.skip)(
    'leaves nothing behind when the disk fills up during a backup: one line, exit 1',
    async () => {
      const app = await startTestApp();
      const dir = mkdtempSync(join(tmpdir(), 'plant-store-backup-full-'));
      try {
        for (let id = 1; id <= 50; id++) {
          const created = await request(app.server)
            .post('/plants')
            .set('Authorization', `Bearer ${app.token}`)
            .send({ id, name: 'x'.repeat(1000) });
          expect(created.status).toBe(200);
        }
        // A disk that is full past 16 KiB: the file size limit (writes past it fail with EFBIG,
        // SIGXFSZ ignored), as a full disk fails them with ENOSPC.
        const file = join(dir, 'backup.sqlite');
        const full = await run(
          'bash',
          [
            '-c',
            `trap '' XFSZ; ulimit -f 16; exec "$0" "$@"`,
            process.execPath,
            join(ROOT, 'dist/cli/store.js'),
            'backup',
            file,
          ],
          { DATABASE_URL: app.databaseUrl },
        );
        expect(full.code).toBe(1);
        expect(full.stderr).toMatch(
          new RegExp(`^store: cannot write the backup to ${file} \\(.*\\); nothing was left behind\n$`),
        );
        expect(readdirSync(dir)).toEqual([]);
      } finally {
        await app.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
