import { join } from 'node:path';
import { freshDatabase, type TestDatabase } from './support/databases';
import { run } from './support/spawn';

const ROOT = process.cwd();

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
      /^store: (SQLite file|PostgreSQL at) .+\napplied: none\npending: CreatePlantStore\w+\n$/,
    );

    const migrated = await store('migrate');
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(/\napplied now: CreatePlantStore\w+\n$/);
    expect((await store('status')).stdout).toMatch(/\napplied: CreatePlantStore\w+\npending: none\n$/);
    expect((await store('migrate')).stdout).toMatch(/\napplied now: none\n$/);

    const reverted = await store('revert');
    expect(reverted.code).toBe(0);
    expect(reverted.stdout).toMatch(/\nreverted: CreatePlantStore\w+\n$/);
    expect((await store('status')).stdout).toMatch(/\napplied: none\npending: CreatePlantStore\w+\n$/);

    const nothing = await store('revert');
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/^store: .+ has no migration to revert\n$/);
  }, 60_000);

  it('answers a wrong command with its usage (exit 2)', async () => {
    const wrong = await store('upgrade');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/^store: usage: node dist\/cli\/store\.js <command>/);
  });
});
