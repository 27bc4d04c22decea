import {
  type DynamicModule,
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { Metrics } from '../observability/metrics';
import { openStore, StoreOpenError, storeKind } from './open-store';
import { Store } from './store';
import { type HeldLock, STORE_KIND, type StoreClient, type StoreEntities, type StoreKind } from './store-kind';
import { StoreCheck, StoreOutage, StoreRecovery } from './store-outage';

/** Held while a server runs, once its store is migrated, so that an operator's revert refuses to run beside it. */
@Injectable()
export class ServerLock implements OnModuleInit, OnApplicationShutdown {
  private held?: HeldLock;

  constructor(
    @Inject(STORE_KIND) private readonly kind: StoreKind,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      this.held = await this.kind.holdServerLock(this.config.database);
    } catch (error) {
      throw new StoreOpenError(this.kind.describe(this.config.database), error);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.held?.release();
  }
}

/** The store is closed as the application stops. */
@Injectable()
class StoreClosing implements OnApplicationShutdown {
  constructor(private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

/** A server's helper beside its store (SQLite's checkpointer thread), if its kind has one; a test may provide none. */
export const STORE_COMPANION = 'STORE_COMPANION';

/** The kind of store DATABASE_URL names, decided here once: every other part is given it (STORE_KIND). */
@Module({
  providers: [
    { provide: STORE_KIND, inject: [APP_CONFIG], useFactory: ({ database }: AppConfig) => storeKind(database) },
  ],
  exports: [STORE_KIND],
})
export class StoreKindModule {}

@Module({})
export class DatabaseModule {
  /**
   * The store DATABASE_URL names, its kind decided once (STORE_KIND), opened and migrated as the
   * application is built (a bad one stops the start); for a server, also watched, checked and locked.
   */
  static forRoot({ client, entities }: { client: StoreClient; entities: StoreEntities }): DynamicModule {
    const server = [
      {
        provide: StoreCheck,
        inject: [STORE_KIND, DataSource],
        useFactory: (kind: StoreKind, dataSource: DataSource) => kind.storeCheck(dataSource),
      },
      StoreRecovery,
      {
        provide: STORE_COMPANION,
        inject: [STORE_KIND, DataSource],
        useFactory: (kind: StoreKind, dataSource: DataSource) => kind.companion?.(dataSource) ?? null,
      },
      ServerLock,
    ];
    return {
      module: DatabaseModule,
      global: true,
      imports: [StoreKindModule],
      providers: [
        {
          provide: DataSource,
          inject: [STORE_KIND, APP_CONFIG],
          useFactory: (kind: StoreKind, { database }: AppConfig) => {
            const migrated = (names: string[]): void => {
              const applied = names.length === 0 ? 'no migration to apply' : `applied ${names.join(', ')}`;
              new Logger('Store').log({
                migrationsApplied: names,
                msg: `opened the ${kind.describe(database)}; ${applied}`,
              });
            };
            return openStore(database, entities, client, {
              kind,
              migrated: client === 'server' ? migrated : undefined,
            });
          },
        },
        StoreClosing,
        {
          provide: StoreOutage,
          inject: [Metrics],
          useFactory: (metrics: Metrics) => new StoreOutage(metrics, new Logger('Store')),
        },
        Store,
        ...(client === 'server' ? server : []),
      ],
      exports: [StoreKindModule, DataSource, StoreOutage, Store, ...(client === 'server' ? [StoreCheck] : [])],
    };
  }
}
