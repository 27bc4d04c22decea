import Database from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../src/config/configuration';
import { openStore } from '../src/database/open-store';
import { freshDatabase, testStoreKind, type TestDatabase } from './support/databases';
import { ENTITIES } from '../src/entities';

describe('migrations', () => {
  let database: TestDatabase;
  let dataSource: DataSource;
  beforeAll(async () => {
    database = await freshDatabase();
    dataSource = await openStore(parseDatabaseUrl(database.url), ENTITIES);
  });
  afterAll(async () => {
    await dataSource.destroy();
    await database.drop();
  });

  it('run on start and leave nothing for migration:generate to add', async () => {
    expect(await dataSource.showMigrations()).toBe(false);
    const pending = (await dataSource.driver.createSchemaBuilder().log()).upQueries.map((query) => query.query);
    if (pending.length > 0) {
      throw new Error(
        `the entities need SQL no migration has (${pending.join('; ')}): run npm run migration:generate -- ExpandName`,
      );
    }
  });

  it('revert cleanly, and run again', async () => {
    for (let applied = await appliedCount(dataSource); applied > 0; applied--) await dataSource.undoLastMigration();
    const queryRunner = dataSource.createQueryRunner();
    try {
      expect(await queryRunner.hasTable('plant')).toBe(false);
      expect(await queryRunner.hasTable('api_token')).toBe(false);
    } finally {
      await queryRunner.release();
    }
    await dataSource.runMigrations();
    expect(await dataSource.showMigrations()).toBe(false);
  });
});

async function appliedCount(dataSource: DataSource): Promise<number> {
  const rows: unknown[] = await dataSource.query('SELECT * FROM "migrations"');
  return rows.length;
}

(testStoreKind() === 'sqlite' ? describe : describe.skip)('opening a new SQLite file', () => {
  // Several workers or instances starting on one new file: while one holds the write lock,
  // SQLite refuses the others' switch to WAL at once, without waiting in its busy handler.
  it('waits while another connection writes it, then switches it to WAL', async () => {
    const database = await freshDatabase();
    const config = parseDatabaseUrl(database.url);
    if (config.type !== 'sqlite') throw new Error('a SQLite test database was expected');
    const other = new Database(config.path);
    try {
      other.exec('BEGIN IMMEDIATE; CREATE TABLE elsewhere (x)');
      const released = setTimeout(() => other.exec('COMMIT'), 200);
      const dataSource = await openStore(config, ENTITIES, 'server');
      clearTimeout(released);
      try {
        expect(await dataSource.query('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
        expect(await dataSource.showMigrations()).toBe(false);
      } finally {
        await dataSource.destroy();
      }
    } finally {
      other.close();
      await database.drop();
    }
  });
});
