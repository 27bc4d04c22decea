import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminUrl, freshDatabase, testStoreKind, type TestDatabase } from '../support/databases';
import { run } from '../support/spawn';
import { createToken, TOKEN_CLI } from '../support/server-process';

const PLANTS_CLI = join(process.cwd(), 'dist/cli/plants.js');

/** The lines of docs/operations.md's PostgreSQL backup block that start with `command`. */
function documented(command: 'pg_dump' | 'pg_restore'): string {
  const operations = readFileSync(join(process.cwd(), 'docs/operations.md'), 'utf8');
  const lines = operations.split('\n').filter((line) => line.startsWith(`${command} `));
  expect(lines).toHaveLength(1);
  return lines[0];
}

/**
 * The documented backup and restore of a PostgreSQL store, run as written: a restore onto the
 * store as the service leaves it (migrated, holding plants and tokens made since the backup).
 */
(testStoreKind() === 'postgres' ? describe : describe.skip)('a PostgreSQL backup restored as documented', () => {
  let database: TestDatabase;
  let folder: string;
  beforeAll(async () => {
    database = await freshDatabase();
    folder = mkdtempSync(join(tmpdir(), 'plant-store-restore-'));
  });
  afterAll(async () => {
    rmSync(folder, { recursive: true, force: true });
    await database.drop();
  });

  const shell = (line: string) => run('sh', ['-c', line], { DATABASE_URL: adminUrl(database.url) }, 60_000, folder);
  const plants = async (): Promise<string> =>
    (await run(process.execPath, [PLANTS_CLI, 'export'], { DATABASE_URL: database.url })).stdout;
  const tokens = async (): Promise<string[]> =>
    (await run(process.execPath, [TOKEN_CLI, 'list'], { DATABASE_URL: database.url })).stdout
      .split('\n')
      .map((line) => line.split(/\s+/)[0])
      .filter((name) => /^(before|after)$/.test(name));
  const importLine = (line: string) =>
    run('sh', ['-c', `printf '%s\\n' '${line}' | "${process.execPath}" "${PLANTS_CLI}" import -`], {
      DATABASE_URL: database.url,
    });

  it('puts back the plants and tokens of the backup, over a store that has its schema and newer rows', async () => {
    await createToken(database.url, 'before');
    expect((await importLine('{"id":9007199254740993,"name":"Monstera","tag":"aroid"}')).code).toBe(0);
    const backedUp = await plants();
    expect(await shell(documented('pg_dump'))).toMatchObject({ code: 0 });

    await createToken(database.url, 'after');
    expect((await importLine('{"id":2,"name":"Fern"}')).code).toBe(0);
    expect(await plants()).not.toBe(backedUp);

    const restored = await shell(documented('pg_restore'));
    expect({ code: restored.code, stderr: restored.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await plants()).toBe(backedUp);
    expect(await tokens()).toEqual(['before']);
  });
});
