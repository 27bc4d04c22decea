import { type DynamicModule, Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { Metrics } from '../metrics/metrics';
import { PostgresStoreCheck } from './postgres-store-check';
import { SqliteStoreCheck } from './sqlite-store-check';
import { StoreCheck } from './store-check';
import { StoreOutage } from './store-outage';
import { storeProvider } from './store-provider';
import { StoreRecovery } from './store-recovery';

/**
 * The store connection, the outage log, the check of whether the store takes writes (for the
 * health probes) and what ends an outage by itself, for every feature module; each feature
 * provides its own store implementations with `storeProvider`. The DataSource comes in already open and
 * migrated (`openStore`, before the application is built, so that a store that cannot be
 * opened stops the start with one clear line); TypeORM's module owns it from then on and closes
 * it when the application closes.
 */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(dataSource: DataSource): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => dataSource.options,
          dataSourceFactory: () => Promise.resolve(dataSource),
        }),
      ],
      providers: [
        {
          provide: StoreOutage,
          inject: [Metrics],
          useFactory: (metrics: Metrics) => new StoreOutage(new Logger('Store'), metrics),
        },
        storeProvider(StoreCheck, { sqlite: SqliteStoreCheck, postgres: PostgresStoreCheck }),
        StoreRecovery,
      ],
      exports: [StoreOutage, StoreCheck],
    };
  }
}
