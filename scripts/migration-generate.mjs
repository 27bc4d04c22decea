// `npm run migration:generate -- Name`: after an entity changed, the migration that brings each
// kind of store (SQLite, PostgreSQL) from the schema the existing migrations make to the
// entities'. TypeORM's generator compares the entities with a live store, so each kind gets a
// throwaway one, migrated first: `src/database/migrations/<kind>/<timestamp>-Name.ts`, formatted;
// the store runs every file of its folder.
// PostgreSQL: POSTGRES_URL names a server to make the throwaway database on (default: this
// machine's, user postgres).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const name = process.argv[2];
if (name === undefined || !/^[A-Z][A-Za-z0-9]*$/.test(name) || process.argv.length > 3) {
  console.error(
    'usage: npm run migration:generate -- Name   (PascalCase; start it with Expand when older versions keep working)',
  );
  process.exit(2);
}

const server = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `plant_store_migration_${process.pid}`;
const admin = new pg.Client({ connectionString: server });
try {
  await admin.connect();
} catch (error) {
  // Nothing is made before this: a failure here leaves nothing behind.
  console.error(
    `migration:generate needs a PostgreSQL server to generate its migration on: POSTGRES_URL ` +
      `(${shownUrl()}) cannot be reached (${error.code ?? error.message}); start one, or set POSTGRES_URL`,
  );
  process.exit(1);
}
const folder = mkdtempSync(join(tmpdir(), 'plant-store-migration-'));
const stores = {
  sqlite: `sqlite:${join(folder, 'store.sqlite')}`,
  postgres: Object.assign(new URL(server), { pathname: `/${database}` }).href,
};

/** POSTGRES_URL as it may be shown: without its password. */
function shownUrl() {
  const url = new URL(server);
  if (url.password !== '') url.password = '***';
  return url.href;
}

function run(command, args, env) {
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status ?? result.signal}`);
}

const written = [];
// One timestamp for both: one schema version, in two dialects.
const timestamp = String(Date.now());
try {
  await admin.query(`CREATE DATABASE "${database}"`);
  for (const [kind, url] of Object.entries(stores)) {
    const env = { DATABASE_URL: url, DATABASE_URL_FILE: '' };
    const before = new Set(readdirSync(`src/database/migrations/${kind}`));
    run('node_modules/.bin/ts-node', ['--transpile-only', 'src/cli/store.ts', 'migrate'], env);
    run(
      'node_modules/.bin/typeorm-ts-node-commonjs',
      ['-d', 'ormconfig.ts', 'migration:generate', '-t', timestamp, `src/database/migrations/${kind}/${name}`],
      env,
    );
    for (const file of readdirSync(`src/database/migrations/${kind}`)) {
      if (!before.has(file)) written.push(`src/database/migrations/${kind}/${file}`);
    }
  }
  run('node_modules/.bin/prettier', ['--write', '--log-level', 'warn', ...written]);
  console.log(`written: ${written.join(', ')}`);
} catch (error) {
  console.error(`migration:generate: ${error.message}`);
  process.exitCode = 1;
} finally {
  await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  await admin.end();
  rmSync(folder, { recursive: true, force: true });
}
