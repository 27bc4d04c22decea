import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { fileScoped } from './file-scoped';

export interface TestDatabase {
  url: string;
  kind: 'sqlite' | 'postgres';
  drop(): Promise<void>;
}

/**
 * The store the tests run on: a SQLite file in a temp folder, or, when TEST_DATABASE_URL names
 * a PostgreSQL server (`npm run test:postgres`), a fresh database on it, dropped afterwards;
 * reached through the pooler at TEST_POOLER_URL when one is set (`npm run test:pgbouncer`).
 */
export function testStoreKind(): 'sqlite' | 'postgres' {
  return /^postgres(ql)?:/.test(process.env.TEST_DATABASE_URL ?? '') ? 'postgres' : 'sqlite';
}

export async function freshDatabase(): Promise<TestDatabase> {
  const admin = process.env.TEST_DATABASE_URL;
  if (admin === undefined || testStoreKind() === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-test-'));
    return {
      url: `sqlite:${join(dir, 'store.sqlite')}`,
      kind: 'sqlite',
      drop: () => Promise.resolve(rmSync(dir, { recursive: true, force: true })),
    };
  }
  const name = `plant_store_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(process.env.TEST_POOLER_URL ?? admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    kind: 'postgres',
    async drop() {
      const dropper = new pg.Client({ connectionString: admin });
      await dropper.connect();
      try {
        await dropper.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await dropper.end();
      }
    },
  };
}

/** The URL of `databaseUrl`'s database on the server itself (TEST_DATABASE_URL), past any pooler. */
export function adminUrl(databaseUrl: string): string {
  const url = new URL(process.env.TEST_DATABASE_URL!);
  url.pathname = new URL(databaseUrl).pathname;
  return url.toString();
}

/** `work` on a connection of its own to `databaseUrl`'s PostgreSQL database, past any pooler. */
export async function onPostgres<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl(databaseUrl) });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Runs SQL on the store at `databaseUrl` from another connection, as an operator (or an accident) would. */
export async function alterStore(databaseUrl: string, sqlite: string, postgres: string = sqlite): Promise<void> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length));
    try {
      db.exec(sqlite);
    } finally {
      db.close();
    }
  } else {
    await onPostgres(databaseUrl, (client) => client.query(postgres));
  }
}

/** Takes the plant table's write lock from another connection: creates wait until it is released. */
export async function holdPlantTable(databaseUrl: string): Promise<() => Promise<void>> {
  if (databaseUrl.startsWith('sqlite:')) {
    const other = new Database(databaseUrl.slice('sqlite:'.length));
    other.exec('BEGIN IMMEDIATE');
    return () => {
      other.exec('COMMIT');
      other.close();
      return Promise.resolve();
    };
  }
  const other = new pg.Client({ connectionString: adminUrl(databaseUrl) });
  await other.connect();
  await other.query('BEGIN');
  await other.query('LOCK TABLE "plant" IN EXCLUSIVE MODE');
  return async () => {
    await other.query('COMMIT');
    await other.end();
  };
}

/** For a whole test file: a fresh store made before its tests and dropped after. */
export const fileDatabase = (): (() => TestDatabase) => fileScoped(freshDatabase, (database) => database.drop());
