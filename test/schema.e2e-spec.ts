import { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../src/config/configuration';
import { openDataSource } from '../src/database/data-source-options';
import { freshDatabase, type TestDatabase } from './support/databases';

describe('migrations', () => {
  let database: TestDatabase;
  let dataSource: DataSource;
  beforeAll(async () => {
    database = await freshDatabase();
    dataSource = await openDataSource(parseDatabaseUrl(database.url));
  });
  afterAll(async () => {
    await dataSource.destroy();
    await database.drop();
  });

  it('run on start and leave nothing for migration:generate to add', async () => {
    expect(await dataSource.showMigrations()).toBe(false);
    const pending = await dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((query) => query.query)).toEqual([]);
  });

  it('revert cleanly, and run again', async () => {
    await dataSource.undoLastMigration();
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
