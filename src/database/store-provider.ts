import type { Abstract, Provider } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CONFIG, type ConfigSlice, type DatabaseConfig } from '../config/configuration';
import { StoreOutage } from './store-outage';

type StoreClass<T> = new (dataSource: DataSource, outage: StoreOutage) => T;

/** The kind of store, as DATABASE_URL names it (`parseDatabaseUrl` decides it, once). */
export type StoreKindName = DatabaseConfig['type'];

/** A feature's store, written once for each kind of store. */
export type StoreImplementations<T> = Readonly<Record<StoreKindName, StoreClass<T>>>;

/** The implementation for `kind`, on the open DataSource. */
export function chooseStore<T>(
  implementations: StoreImplementations<T>,
  kind: StoreKindName,
  dataSource: DataSource,
  outage: StoreOutage,
): T {
  return new implementations[kind](dataSource, outage);
}

/**
 * `chooseStore` as a Nest provider of the feature's abstract store class, for the kind of store
 * the configuration names. Nothing downstream asks which store it is on.
 */
export function storeProvider<T>(store: Abstract<T>, implementations: StoreImplementations<T>): Provider {
  return {
    provide: store,
    inject: [CONFIG.database, DataSource, StoreOutage],
    useFactory: (database: ConfigSlice<'database'>, dataSource: DataSource, outage: StoreOutage): T =>
      chooseStore(implementations, database.type, dataSource, outage),
  };
}
