import type { Provider } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { StoreOutage } from './store-outage';

export type StoreKind = 'sqlite' | 'postgres';

type StoreClass<T> = new (dataSource: DataSource, outage: StoreOutage) => T;

export function storeKindOf(dataSource: DataSource): StoreKind {
  return dataSource.options.type === 'postgres' ? 'postgres' : 'sqlite';
}

export type StoreImplementations<T> = Readonly<Record<StoreKind, StoreClass<T>>>;

/**
 * Which store implementation serves a feature is decided here, once: each feature names its
 * SQLite and PostgreSQL classes and gets the one that matches the DataSource. Nothing downstream
 * asks which store it is on.
 */
export function chooseStore<T>(
  implementations: StoreImplementations<T>,
  dataSource: DataSource,
  outage: StoreOutage,
): T {
  return new implementations[storeKindOf(dataSource)](dataSource, outage);
}

/** `chooseStore` as a Nest provider, for module wiring. */
export function storeProvider<T>(token: symbol, implementations: StoreImplementations<T>): Provider {
  return {
    provide: token,
    inject: [DataSource, StoreOutage],
    useFactory: (dataSource: DataSource, outage: StoreOutage): T => chooseStore(implementations, dataSource, outage),
  };
}
