import { Module } from '@nestjs/common';
import { storeProvider } from '../database/store-provider';
import { PlantStore } from './plant-store';
import { PlantsController } from './plants.controller';
import { PlantsService } from './plants.service';
import { PLANT_STORES } from './stores/plant-stores';

@Module({
  controllers: [PlantsController],
  providers: [PlantsService, storeProvider(PlantStore, PLANT_STORES)],
})
export class PlantsModule {}
