import {
  type DynamicModule,
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { Metrics } from '../observability/metrics';
import { Checkpointer, ServerCheckpointer } from './checkpointer';
import { PostgresStoreCheck } from './postgres/store-check';
import { SqliteCheckpointer } from './sqlite/checkpointer';
import { SqliteStoreCheck } from './sqlite/store-check';
import { StoreCheck } from './store-check';
import { StoreOutage } from './store-outage';
import { storeProvider } from './store-provider';
import { StoreRecovery } from './store-recovery';
import type { ServerLock } from './store-kind';

const SERVER_LOCK = Symbol('ServerLock');

/** Releases the server's lock on its store (StoreKind.holdServerLock) when the application closes. */
@Injectable()
class ServerLockRelease implements OnApplicationShutdown {
  constructor(@Inject(SERVER_LOCK) private readonly lock: ServerLock) {}

  onApplicationShutdown(): Promise<void> {
    return this.lock.release();
  }
}

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
        storeProvider(Checkpointer, { sqlite: SqliteCheckpointer, postgres: ServerCheckpointer }),
        StoreRecovery,
        // Let go when the application closes (the store with it), after the drain.
        { provide: SERVER_LOCK, useValue: serverLock },
        ServerLockRelease,
      ],
      exports: [StoreOutage, StoreCheck],
    };
  }
}
