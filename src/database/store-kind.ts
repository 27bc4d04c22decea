import type { DataSource, DataSourceOptions, QueryRunner } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';

/** The entity classes of the store's tables (`src/entities.ts`). */
export type StoreEntities = readonly (new () => object)[];

/** A server's hold on its store (StoreKind.holdServerLock). */
export interface ServerLock {
  release(): Promise<void>;
}

/** What an operator's command says when a server holds the store it would change. */
export const SERVER_RUNNING =
  "a server is running on this store (it holds the store's server lock); stop every instance first";

/** Why a breaking migration was not applied. */
export function breakingRefusal(migration: string): string {
  return (
    `migration ${migration} is breaking (older versions cannot run on the store it leaves), and a server is ` +
    'running on this store; stop every instance of the older version first (see "Upgrades" in docs/operations.md)'
  );
}

/** Who opens the store: the server, or an operator command (which may simply block). */
export type StoreClient = 'server' | 'command';

/**
 * Everything that differs between SQLite and PostgreSQL in opening a store. `openStore` picks
 * one of the two (by DATABASE_URL) once; nothing else asks which store it is on, but for the
 * store classes themselves, chosen the same way (storeProvider).
 */
export interface StoreKind<C extends DatabaseConfig = DatabaseConfig> {
  /** TypeORM's options: the connection, the tables' entities, this store's own migrations. */
  options(database: C, entities: StoreEntities): DataSourceOptions;
  /** Where the store is, for an operator's line: a file path, or a URL without its password. */
  describe(database: C): string;
  /** Before connecting (SQLite: the owner-only file and folder). */
  beforeConnect(database: C): void;
  /** After connecting, before migrating: refuses a store the service cannot keep text in. */
  check(dataSource: DataSource): Promise<void>;
  /**
   * Applies pending migrations, one process at a time when several start together; names those
   * it applied. A breaking one (see `isCompatible`) is applied only while no server holds the
   * store: StoreCommandError (`breakingRefusal`) otherwise.
   */
  migrate(dataSource: DataSource, database: C): Promise<string[]>;
  /**
   * Reverts the last applied migration, under the same lock as migrate, and only while no server
   * holds the store (StoreCommandError otherwise): a server would go on running on tables that
   * are gone. `approve` runs first, under that lock, on the connection the revert uses; it
   * refuses by throwing, and then nothing is changed.
   */
  revert(dataSource: DataSource, database: C, approve: (runner: QueryRunner) => Promise<void>): Promise<void>;
  /**
   * Held by a server for as long as it runs (released when it exits, however it exits), so that
   * an operator's command can tell that one is running on the store.
   */
  holdServerLock(database: C): Promise<ServerLock>;
  /** Writes a consistent copy of the store, owner-only, to a new `file`, while it serves. */
  backup(dataSource: DataSource, file: string): Promise<void>;
  /** Once migrated, how the server (not an operator command) uses the connection. */
  serve(dataSource: DataSource): void;
}
