import { Test, type TestingModule } from '@nestjs/testing';
import type { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/configuration';
import { getRepositoryToken } from '@nestjs/typeorm';
import { openStore, storeOf } from '../../src/database/open-store';
import { Store } from '../../src/database/store';
import { ENTITIES } from '../../src/entities';
import { Metrics, PrometheusMetrics } from '../../src/observability/metrics';
import { PlantEntity } from '../../src/plants/plant.entity';
import { PlantsController } from '../../src/plants/plants.controller';
import { PlantsService } from '../../src/plants/plants.service';
import { freshDatabase } from './databases';
import { fileScoped } from './file-scoped';

export interface PlantsTesting {
  module: TestingModule;
  dataSource: DataSource;
  close(): Promise<void>;
}

/** The plants feature built by Nest's testing module on a fresh store of its own (`freshDatabase`), metrics counting. */
export async function plantsTestingModule(): Promise<PlantsTesting> {
  const database = await freshDatabase();
  let dataSource: DataSource | undefined;
  try {
    const config = parseDatabaseUrl(database.url);
    dataSource = await openStore(config, ENTITIES);
    const module = await Test.createTestingModule({
      controllers: [PlantsController],
      providers: [
        PlantsService,
        { provide: getRepositoryToken(PlantEntity), useValue: dataSource.getRepository(PlantEntity) },
        { provide: Store, useValue: storeOf(dataSource) },
        { provide: Metrics, useValue: new PrometheusMetrics() },
      ],
    }).compile();
    const opened = dataSource;
    return {
      module,
      dataSource: opened,
      async close() {
        await module.close();
        await opened.destroy();
        await database.drop();
      },
    };
  } catch (error) {
    await dataSource?.destroy();
    await database.drop();
    throw error;
  }
}

/** For a whole spec file: `plantsTestingModule()` built before its tests and closed after. */
export const usePlantsModule = (): (() => PlantsTesting) =>
  fileScoped(plantsTestingModule, (testing) => testing.close());
