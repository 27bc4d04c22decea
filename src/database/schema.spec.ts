import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';

describe('migrations', () => {
  let dataSource: DataSource;
  beforeAll(async () => {
    dataSource = await new DataSource(dataSourceOptions({ type: 'sqlite', path: ':memory:' })).initialize();
  });
  afterAll(async () => {
    await dataSource.destroy();
  });

  it('run on start and leave nothing for migration:generate to add', async () => {
    expect(await dataSource.showMigrations()).toBe(false);
    const pending = await dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((query) => query.query)).toEqual([]);
  });

  it('revert cleanly', async () => {
    await dataSource.undoLastMigration();
    const tables: { name: string }[] = await dataSource.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('plant', 'api_token')`);
    expect(tables).toEqual([]);
    await dataSource.runMigrations();
  });
});
