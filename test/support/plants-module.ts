import { Test, type TestingModule } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { APP_CONFIG, configModule, loadConfig } from '../../src/config/configuration';
import { DatabaseModule, STORE_COMPANION } from '../../src/database/database.module';
import { ENTITIES } from '../../src/entities';
import { Metrics } from '../../src/observability/metrics';
import { PrometheusMetrics } from '../../src/observability/prometheus-metrics';
import { MetricsModule } from '../../src/observability/metrics.module';
import { PlantsModule } from '../../src/plants/plants.module';
import { freshDatabase, type TestDatabase } from './databases';
import { fileScoped } from './file-scoped';

export interface PlantsTesting {
  module: TestingModule;
  dataSource: DataSource;
  close(): Promise<void>;
}

/**
 * The plants feature as the server builds it (PlantsModule over the server's DatabaseModule), by
 * Nest's testing module on a fresh store of its own (`freshDatabase`), or `on` one a test made;
 * metrics counting.
 */
export async function plantsTestingModule(on?: TestDatabase): Promise<PlantsTesting> {
  const database = on ?? (await freshDatabase());
  const drop = async (): Promise<void> => {
    if (on === undefined) await database.drop();
  };
  let module: TestingModule | undefined;
  try {
    module = await Test.createTestingModule({
      imports: [
        configModule,
        MetricsModule,
        DatabaseModule.forRoot({ client: 'server', entities: ENTITIES }),
        PlantsModule,
      ],
    })
      .overrideProvider(APP_CONFIG)
      .useValue(loadConfig({ DATABASE_URL: database.url }))
      .overrideProvider(Metrics)
      .useValue(new PrometheusMetrics())
      .overrideProvider(STORE_COMPANION)
      .useValue(null)
      .compile();
    await module.init();
    const built = module;
    return {
      module: built,
      dataSource: built.get(DataSource),
      async close() {
        await built.close();
        await drop();
      },
    };
  } catch (error) {
    await module?.close();
    await drop();
    throw error;
  }
}

/** For a whole spec file: `plantsTestingModule()` built before its tests and closed after. */
export const usePlantsModule = (): (() => PlantsTesting) =>
  fileScoped(plantsTestingModule, (testing) => testing.close());
