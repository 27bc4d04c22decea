/**
 * What the bench scripts share about stores: BENCH_POSTGRES_URL's server, the service's own
 * migrations, and the grown stores (filled once with a given number of plants and kept in
 * bench/.grown/ or as plant_store_grown_N), which `npm run bench`'s grown targets serve and
 * `npm run bench:import -- --sizes` measures.
 *
 * A grown plant has the bench's shape: an id uniform over [0, 2^53) (16 digits, most of them),
 * the name `Plant <id>` (22 characters) and the tag `grown`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

export const ROOT = join(__dirname, '..');
export const POSTGRES_ADMIN = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const GROWN_DIR = join(ROOT, 'bench/.grown');

/** In which order a fill inserts its plants: by id (as an import of an export does), or at random (as clients). */
export type FillOrder = 'id' | 'random';

/** Creates the service's schema in the store at `url`, with the service's own command. */
export function migrate(url: string): void {
  execFileSync(process.execPath, [join(ROOT, 'dist/cli/store.js'), 'migrate'], {
    env: { ...process.env, DATABASE_URL: url },
    stdio: 'ignore',
  });
}

/** A database on BENCH_POSTGRES_URL's server, as a URL. */
export function postgresUrl(name: string): string {
  const parsed = new URL(POSTGRES_ADMIN);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/** The database a PostgreSQL URL names. */
export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

export async function onPostgres<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Fills a migrated SQLite file with `plants` plants of random ids, with the sqlite3 CLI (no
 * journal, no sync: minutes for 40 M), then leaves it in WAL mode as the service keeps it.
 */
export function fillSqlite(file: string, plants: number, order: FillOrder): void {
  const fill = `
    PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF; PRAGMA cache_size = -1000000;
    INSERT OR IGNORE INTO "plant" ("id", "name", "tag")
      SELECT id, 'Plant ' || id, 'grown' FROM (
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${plants})
        SELECT abs(random()) % 9007199254740992 AS id FROM n
      )${order === 'id' ? ' ORDER BY id' : ''};
    PRAGMA journal_mode = WAL;`;
  execFileSync('sqlite3', [file], { input: fill, stdio: ['pipe', 'ignore', 'inherit'] });
}

/** Fills a migrated PostgreSQL database with `plants` plants of random ids (generate_series), then vacuums it. */
export async function fillPostgres(url: string, plants: number, order: FillOrder): Promise<void> {
  await onPostgres(url, async (client) => {
    await client.query(`SET work_mem = '1GB'`);
    await client.query(
      order === 'id'
        ? `INSERT INTO plant (id, name, tag)
             SELECT id, 'Plant ' || id, 'grown'
             FROM (SELECT DISTINCT floor(random() * 9007199254740992)::bigint AS id FROM generate_series(1, $1)) ids
             ORDER BY id`
        : `INSERT INTO plant (id, name, tag)
             SELECT id, 'Plant ' || id, 'grown'
             FROM (SELECT floor(random() * 9007199254740992)::bigint AS id FROM generate_series(1, $1)) ids
             ON CONFLICT DO NOTHING`,
      [plants],
    );
    await client.query('VACUUM (ANALYZE) plant');
    await client.query('CHECKPOINT');
  });
}

/**
 * The grown SQLite store of `plants` plants (ids random, inserted in id order), filled if it is
 * not yet, under a name of its own renamed once full, and kept in bench/.grown/: its file.
 */
export function grownSqlite(plants: number): string {
  const file = join(GROWN_DIR, `plants-${plants}.sqlite`);
  if (existsSync(file)) return file;
  mkdirSync(GROWN_DIR, { recursive: true });
  const partial = `${file}.partial`;
  rmSync(partial, { force: true });
  process.stdout.write(`filling ${file} with ${plants} plants (once)...\n`);
  migrate(`sqlite:${partial}`);
  fillSqlite(partial, plants, 'id');
  // Written back now, not by the kernel during the first measurement.
  execFileSync('sync');
  renameSync(partial, file);
  rmSync(`${partial}.server-lock`, { force: true });
  return file;
}

/**
 * The grown PostgreSQL database of `plants` plants (ids random, inserted in id order), filled if
 * it is not yet, under a name of its own renamed to plant_store_grown_N only once full: its URL.
 */
export async function grownPostgres(plants: number): Promise<string> {
  const name = `plant_store_grown_${plants}`;
  const exists = await onPostgres(POSTGRES_ADMIN, async (admin) => {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return found.rowCount === 1;
  });
  if (!exists) {
    const partial = `${name}_partial`;
    process.stdout.write(`filling PostgreSQL database ${name} with ${plants} plants (once)...\n`);
    await onPostgres(POSTGRES_ADMIN, async (admin) => {
      await admin.query(`DROP DATABASE IF EXISTS "${partial}" WITH (FORCE)`);
      await admin.query(`CREATE DATABASE "${partial}"`);
    });
    migrate(postgresUrl(partial));
    await fillPostgres(postgresUrl(partial), plants, 'id');
    await onPostgres(POSTGRES_ADMIN, (admin) => admin.query(`ALTER DATABASE "${partial}" RENAME TO "${name}"`));
  }
  return postgresUrl(name);
}
