/**
 * `npm run bench:import -- --sizes`: bytes per plant on disk, indexes included, on both stores.
 *
 * For each of BENCH_SIZE_PLANTS (default 1000000,40000000) it takes the grown stores of that
 * many plants (bench/stores.ts: random ids inserted in id order, as an import of an export writes
 * them; filled once and kept in bench/.grown/ and as plant_store_grown_N, which `npm run bench`'s
 * grown targets serve with BENCH_GROWN_PLANTS=N) and, for BENCH_SIZE_RANDOM_PLANTS (default
 * 1000000), two throwaway stores filled with the same plants in random order, as clients that
 * pick random ids create them (a B-tree filled at random leaves its pages partly empty). Then:
 *
 *   SQLite      the file plus its -wal after a checkpoint (TRUNCATE), divided by the plants it
 *               holds (count(*): a grown store also holds what bench runs added to it)
 *   PostgreSQL  pg_total_relation_size('plant') (heap, primary key index, TOAST, free space and
 *               visibility maps), and its parts, divided by the plants
 *
 * Prints a table and writes bench/results/store-size.json. A 40 M fill takes minutes and about
 * 2 GB (SQLite) and 3.5 GB (PostgreSQL) of disk, once; BENCH_SIZE_PLANTS=1000000 skips it.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import {
  type FillOrder,
  fillPostgres,
  fillSqlite,
  grownPostgres,
  grownSqlite,
  migrate,
  onPostgres,
  POSTGRES_ADMIN,
  postgresUrl,
  ROOT,
} from './stores';

const list = (value: string | undefined, fallback: string): number[] =>
  (value ?? fallback)
    .split(',')
    .filter(Boolean)
    .map((each) => Number(each.replace(/_/g, '')));
const SIZES = list(process.env.BENCH_SIZE_PLANTS, '1000000,40000000');
const RANDOM_SIZES = list(process.env.BENCH_SIZE_RANDOM_PLANTS, '1000000');

export interface StoreSize {
  store: 'sqlite' | 'postgres';
  /** Plants the fill asked for; `plants` is what the store holds. */
  filled: number;
  order: FillOrder;
  plants: number;
  bytes: number;
  bytesPerPlant: number;
  /** PostgreSQL: the heap and the indexes apart. */
  heapBytes?: number;
  indexBytes?: number;
}

function sqliteSize(file: string, filled: number, order: FillOrder): StoreSize {
  const db = new Database(file);
  let plants: number;
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    plants = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM plant').get()!.n;
  } finally {
    db.close();
  }
  const bytes = statSync(file).size + (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0);
  return { store: 'sqlite', filled, order, plants, bytes, bytesPerPlant: bytes / plants };
}

async function postgresSize(url: string, filled: number, order: FillOrder): Promise<StoreSize> {
  return onPostgres(url, async (client) => {
    const { rows } = await client.query<{ plants: string; total: string; heap: string; indexes: string }>(
      `SELECT (SELECT count(*) FROM plant) AS plants, pg_total_relation_size('plant') AS total,
              pg_relation_size('plant') AS heap, pg_indexes_size('plant') AS indexes`,
    );
    const row = rows[0];
    const plants = Number(row.plants);
    const bytes = Number(row.total);
    return {
      store: 'postgres',
      filled,
      order,
      plants,
      bytes,
      bytesPerPlant: bytes / plants,
      heapBytes: Number(row.heap),
      indexBytes: Number(row.indexes),
    };
  });
}

async function randomOrderSizes(plants: number): Promise<StoreSize[]> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-size-'));
  const name = `plant_store_size_${randomBytes(4).toString('hex')}`;
  try {
    const file = join(dir, 'store.sqlite');
    process.stdout.write(`filling a SQLite store and a PostgreSQL database with ${plants} plants in random order...\n`);
    migrate(`sqlite:${file}`);
    fillSqlite(file, plants, 'random');
    const sqlite = sqliteSize(file, plants, 'random');
    await onPostgres(POSTGRES_ADMIN, (admin) => admin.query(`CREATE DATABASE "${name}"`));
    migrate(postgresUrl(name));
    await fillPostgres(postgresUrl(name), plants, 'random');
    return [sqlite, await postgresSize(postgresUrl(name), plants, 'random')];
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await onPostgres(POSTGRES_ADMIN, (admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  }
}

export async function storeSizes(): Promise<void> {
  const sizes: StoreSize[] = [];
  for (const plants of SIZES) {
    sizes.push(sqliteSize(grownSqlite(plants), plants, 'id'));
    sizes.push(await postgresSize(await grownPostgres(plants), plants, 'id'));
  }
  for (const plants of RANDOM_SIZES) sizes.push(...(await randomOrderSizes(plants)));
  const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
  const lines = [
    '| store | plants | inserted in | MB on disk | bytes/plant | heap MB | indexes MB |',
    '|---|---|---|---|---|---|---|',
    ...sizes.map(
      (s) =>
        `| ${s.store} | ${s.plants} | ${s.order} order | ${mb(s.bytes)} | ${s.bytesPerPlant.toFixed(1)} | ` +
        `${s.heapBytes === undefined ? '' : mb(s.heapBytes)} | ${s.indexBytes === undefined ? '' : mb(s.indexBytes)} |`,
    ),
  ];
  process.stdout.write(
    `\nbytes per plant on disk, indexes included (SQLite: file + -wal after a checkpoint; ` +
      `PostgreSQL: pg_total_relation_size('plant')); plants: id < 2^53, name "Plant <id>", tag "grown":\n` +
      `${lines.join('\n')}\n`,
  );
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/results/store-size.json'),
    `${JSON.stringify({ date: new Date().toISOString(), sizes }, null, 2)}\n`,
  );
}
