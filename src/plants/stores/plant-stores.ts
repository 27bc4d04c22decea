import type { StoreImplementations } from '../../database/store-provider';
import type { PlantStore } from '../plant-store';
import { PostgresPlantStore } from './postgres-plant.store';
import { SqlitePlantStore } from './sqlite-plant.store';

/** The plant store for each kind of store: for PlantsModule, and for `plants export`/`import` (as TOKEN_STORES is for tokens). */
export const PLANT_STORES: StoreImplementations<PlantStore> = {
  sqlite: SqlitePlantStore,
  postgres: PostgresPlantStore,
};
