import { DataSource } from 'typeorm';
import { migrationsOf } from '../../../test/support/migrations';
import { isCompatible } from '../store-kind';

describe('the migrations', () => {
  it('are one schema version in two dialects: the same names, in the same order', () => {
    const names = (kind: 'sqlite' | 'postgres'): (string | undefined)[] => migrationsOf(kind).map((m) => m.name);
    expect(names('sqlite')).toEqual(names('postgres'));
  });

  it('never copy a table on SQLite in an Expand… migration: older versions serve beside it', async () => {
    const dataSource = await new DataSource({ type: 'better-sqlite3', database: ':memory:' }).initialize();
    const runner = dataSource.createQueryRunner();
    const tables = async (): Promise<Map<string, number>> => {
      const rows = (await runner.query(`SELECT "name", "rootpage" FROM sqlite_master WHERE "type" = 'table'`)) as {
        name: string;
        rootpage: number;
      }[];
      return new Map(rows.map((row) => [row.name, row.rootpage]));
    };
    const copies: string[] = [];
    try {
      for (const migration of migrationsOf('sqlite')) {
        const before = await tables();
        await migration.up(runner);
        if (!isCompatible(migration.name ?? '')) continue;
        const after = await tables();
        for (const [table, page] of before) {
          if (after.get(table) !== page) {
            copies.push(
              `${migration.name} copies the table "${table}" (TypeORM's way on SQLite): make its up ` +
                `ALTER TABLE "${table}" ADD COLUMN … for each new column (docs/architecture.md, "Adding a field")`,
            );
          }
        }
      }
    } finally {
      await runner.release();
      await dataSource.destroy();
    }
    expect(copies).toEqual([]);
  });
});

describe('isCompatible', () => {
  it("reads a migration's compatibility from its name alone, so a version that does not know it can", () => {
    expect(isCompatible('ExpandPlantNote1899999999999')).toBe(true);
    expect(isCompatible('RenamePlantTag1899999999999')).toBe(false);
    expect(isCompatible('PlantExpand1899999999999')).toBe(false);
  });

  it('holds the first schema for breaking: no older version runs without it', () => {
    expect(isCompatible(migrationsOf('sqlite')[0].name!)).toBe(false);
  });
});
