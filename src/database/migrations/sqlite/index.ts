// Written by `npm run migration:generate` (scripts/migration-index.mjs): every migration of this folder.
import type { MigrationInterface } from 'typeorm';
import { CreatePlantStoreSqlite1795305600000 } from './1795305600000-CreatePlantStore';

export const MIGRATIONS: readonly (new () => MigrationInterface)[] = [CreatePlantStoreSqlite1795305600000];
