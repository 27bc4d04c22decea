import {
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { Metrics } from '../observability/metrics';
import { databaseOf, openStore, StoreOpenError, storeKind, storeOf } from './open-store';
import { PostgresStoreCheck } from './postgres/postgres-kind';
import { SqliteCheckpointer } from './sqlite/checkpointer';
import { SqliteStoreCheck } from './sqlite/sqlite-kind';
import { Store } from './store';
import type { HeldLock } from './store-kind';
import { StoreCheck, StoreOutage, StoreRecovery } from './store-outage';

/** Held while the application runs, once its store is migrated, so that an operator's revert refuses to run beside it. */
@Injectable()
export class ServerLock implements OnModuleInit, OnApplicationShutdown {
  private held?: HeldLock;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async onModuleInit(): Promise<void> {
    const kind = storeKind(this.config.database);
    try {
      this.held = await kind.holdServerLock(this.config.database);
    } catch (error) {
      throw new StoreOpenError(kind.describe(this.config.database), error);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.held?.release();
  }
}

/** Opens, checks and migrates the store TypeOrmModule's options name; says so in one line. */
function openServerStore(options: DataSourceOptions): Promise<DataSource> {
  const database = databaseOf(options);
  const migrated = (names: string[]): void => {
    const applied = names.length === 0 ? 'no migration to apply' : `applied ${names.join(', ')}`;
    const msg = `opened the ${storeKind(database).describe(database)}; ${applied}`;
    new Logger('Store').log({ migrationsApplied: names, msg });
  };
  return openStore(database, options.entities, 'server', { migrated });
}

/** The store DATABASE_URL names, opened and migrated as the application is built (a bad one stops the start), and what watches it. */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: ({ database }: AppConfig) => ({
        ...storeKind(database).options(database, []),
        autoLoadEntities: true, // the tables the features name (`forFeature`)
        toRetry: () => false, // a wrong URL does not become right by waiting
      }),
      dataSourceFactory: (options) => openServerStore(options!),
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
      inject: [DataSource],
      useFactory: (dataSource: DataSource) =>
        dataSource.options.type === 'postgres' ? new PostgresStoreCheck(dataSource) : new SqliteStoreCheck(dataSource),
    },
    {
      provide: Store,
      inject: [DataSource, StoreOutage, APP_CONFIG],
      useFactory: (dataSource: DataSource, outage: StoreOutage, config: AppConfig) =>
        storeOf(dataSource, outage, config.tracing !== undefined),
    },
    StoreRecovery,
    {
      provide: SqliteCheckpointer,
      inject: [DataSource],
      useFactory: (dataSource: DataSource) =>
        dataSource.options.type === 'postgres' ? null : new SqliteCheckpointer(dataSource),
    },
    ServerLock,
  ],
  exports: [StoreOutage, StoreCheck, Store],
})
export class DatabaseModule {}
