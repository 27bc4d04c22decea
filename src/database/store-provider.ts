import type { Abstract, Provider } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { StoreOutage } from './store-outage';

type StoreClass<T> = new (dataSource: DataSource, outage: StoreOutage) => T;

/** A feature's store, written once for each kind of store. */
export type StoreImplementations<T> = Readonly<Record<'sqlite' | 'postgres', StoreClass<T>>>;

/**
 * Which implementation serves a feature is decided here, once: the one for the kind of store the
 * DataSource was opened on. Nothing downstream asks which store it is on.
 */
export function chooseStore<T>(
  implementations: StoreImplementations<T>,
  dataSource: DataSource,
  outage: StoreOutage,
): T {
  const kind = dataSource.options.type === 'postgres' ? 'postgres' : 'sqlite';
  return new implementations[kind](dataSource, outage);
}

/** `chooseStore` as a Nest provider of the feature's abstract store class. */
export function storeProvider<T>(store: Abstract<T>, implementations: StoreImplementations<T>): Provider {
  return {
    provide: store,
    inject: [DataSource, StoreOutage],
    useFactory: (dataSource: DataSource, outage: StoreOutage): T => chooseStore(implementations, dataSource, outage),
  };
}
