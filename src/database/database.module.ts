import { type DynamicModule, Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CONFIG, type ConfigSlice } from '../config/configuration';
import { Metrics } from '../observability/metrics';
import { storeOf } from './open-store';
import { PostgresStoreCheck } from './postgres/postgres-kind';
import { SqliteCheckpointer } from './sqlite/checkpointer';
import { SqliteStoreCheck } from './sqlite/sqlite-kind';
import { Store } from './store';
import type { ServerLock } from './store-kind';
import { StoreCheck, StoreOutage, StoreRecovery } from './store-outage';

/** The store, opened before the application is built (so a bad one stops the start with one line), and what watches it. */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(dataSource: DataSource, serverLock: ServerLock): DynamicModule {
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
        {
          provide: StoreCheck,
          inject: [CONFIG.database],
          useFactory: (database: ConfigSlice<'database'>) =>
            database.type === 'sqlite' ? new SqliteStoreCheck(dataSource) : new PostgresStoreCheck(dataSource),
        },
        { provide: Store, inject: [StoreOutage], useFactory: (outage: StoreOutage) => storeOf(dataSource, outage) },
        StoreRecovery,
        {
          provide: SqliteCheckpointer,
          inject: [CONFIG.database],
          useFactory: (database: ConfigSlice<'database'>) =>
            database.type === 'sqlite' ? new SqliteCheckpointer(dataSource) : null,
        },
        { provide: 'ServerLock', useValue: { onApplicationShutdown: () => serverLock.release() } },
      ],
      exports: [StoreOutage, StoreCheck, Store],
    };
  }
}
