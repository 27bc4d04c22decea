import { Module } from '@nestjs/common';
import { type StoreImplementations, storeProvider } from '../database/database.module';
import { PlantStore } from './plant-store';
import { PlantsController } from './plants.controller';
import { PlantsService } from './plants.service';
import { PostgresPlantStore } from './stores/postgres-plant.store';
import { SqlitePlantStore } from './stores/sqlite-plant.store';

export const PLANT_STORES: StoreImplementations<PlantStore> = {
  sqlite: SqlitePlantStore,
  postgres: PostgresPlantStore,
};

@Module({
  controllers: [PlantsController],
  providers: [PlantsService, storeProvider(PlantStore, PLANT_STORES)],
})
export class PlantsModule {}
