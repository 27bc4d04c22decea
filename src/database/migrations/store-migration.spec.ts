import { CreatePlantStorePostgres1795305600000 } from './postgres/1795305600000-CreatePlantStore';
import { CreatePlantStoreSqlite1795305600000 } from './sqlite/1795305600000-CreatePlantStore';
import type { MigrationInterface } from 'typeorm';
import { isCompatible } from './store-migration';

describe('isCompatible', () => {
  it('reads a migration’s compatibility from its name alone, so a version that does not know it can', () => {
    expect(isCompatible('ExpandPlantNote1899999999999')).toBe(true);
    expect(isCompatible('RenamePlantTag1899999999999')).toBe(false);
    expect(isCompatible('PlantExpand1899999999999')).toBe(false);
  });

  it('holds the first schema for breaking (no older version runs without it), under one name in both dialects', () => {
    const migrations: MigrationInterface[] = [
      new CreatePlantStoreSqlite1795305600000(),
      new CreatePlantStorePostgres1795305600000(),
    ];
    expect(new Set(migrations.map((migration) => migration.name)).size).toBe(1);
    for (const migration of migrations) {
      expect(isCompatible(migration.name!)).toBe(false);
    }
  });
});
