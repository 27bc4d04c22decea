import { type Abstract, type DynamicModule, Global, Logger, Module, type Provider } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { CONFIG, type ConfigSlice, type DatabaseConfig } from '../config/configuration';
import { Metrics } from '../observability/metrics';
import { PostgresStoreCheck } from './postgres/postgres-kind';
import { SqliteCheckpointer } from './sqlite/checkpointer';
import { SqliteStoreCheck } from './sqlite/sqlite-kind';
import type { ServerLock } from './store-kind';
import { StoreCheck, StoreOutage, StoreRecovery } from './store-outage';

export type StoreImplementations<T> = Readonly<
  Record<DatabaseConfig['type'], new (dataSource: DataSource, outage: StoreOutage) => T>
>;

export function chooseStore<T>(
  implementations: StoreImplementations<T>,
  kind: DatabaseConfig['type'],
  dataSource: DataSource,
  outage: StoreOutage,
): T {
  return new implementations[kind](dataSource, outage);
}

/** `chooseStore` as the provider of a feature's abstract store, for the kind DATABASE_URL names. */
export function storeProvider<T>(store: Abstract<T>, implementations: StoreImplementations<T>): Provider {
  return {
    provide: store,
    inject: [CONFIG.database, DataSource, StoreOutage],
    useFactory: (database: ConfigSlice<'database'>, dataSource: DataSource, outage: StoreOutage): T =>
      chooseStore(implementations, database.type, dataSource, outage),
  };
}

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
        storeProvider(StoreCheck, { sqlite: SqliteStoreCheck, postgres: PostgresStoreCheck }),
        StoreRecovery,
        {
          provide: SqliteCheckpointer,
          inject: [CONFIG.database],
          useFactory: (database: ConfigSlice<'database'>) =>
            database.type === 'sqlite' ? new SqliteCheckpointer(dataSource) : null,
        },
        { provide: 'ServerLock', useValue: { onApplicationShutdown: () => serverLock.release() } },
      ],
      exports: [StoreOutage, StoreCheck],
    };
  }
}
