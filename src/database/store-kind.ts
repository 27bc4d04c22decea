import { join } from 'node:path';
import type { DataSource, DataSourceOptions, QueryRunner } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';

export type StoreEntities = readonly (new () => object)[];

export type ServerLock = { release(): Promise<void> };

/** An operator's store command that cannot be done as asked; the message says what to do (exit 2). */
export class StoreCommandError extends Error {}

/** An operator's store command that failed on its way and left nothing behind (exit 1). */
export class StoreCommandFailure extends Error {}

export const SERVER_RUNNING =
  "a server is running on this store (it holds the store's server lock); stop every instance first";

export function breakingRefusal(migration: string): string {
  return (
    `migration ${migration} is breaking (older versions cannot run on the store it leaves), and a server is ` +
    'running on this store; stop every instance of the older version first (see "Upgrades" in docs/operations.md)'
  );
}

/** `Expand…` migrations only add what older versions never read; any other is breaking. */
export function isCompatible(migrationName: string): boolean {
  return migrationName.startsWith('Expand');
}

/** Every migration of a kind's folder, as built (`.js`) or as tests and the TypeORM CLI run it (`.ts`). */
export const migrationFiles = (kind: DatabaseConfig['type']): string =>
  join(__dirname, 'migrations', kind, '*.{js,ts}');

export type StoreClient = 'server' | 'command';

/** What differs between SQLite and PostgreSQL in opening a store. */
export interface StoreKind<C extends DatabaseConfig = DatabaseConfig> {
  options(database: C, entities: StoreEntities): DataSourceOptions;
  describe(database: C): string;
  beforeConnect(database: C): void;
  /** Refuses a store the service cannot keep its text in. */
  check(dataSource: DataSource): Promise<void>;
  /** Applies pending migrations, one process at a time; a breaking one only while no server runs. */
  migrate(dataSource: DataSource, database: C): Promise<string[]>;
  /** Reverts the last migration once no server runs and `approve` (run first, on the lock) allows it. */
  revert(dataSource: DataSource, database: C, approve: (runner: QueryRunner) => Promise<void>): Promise<void>;
  /** Held by a server while it runs (released however it exits), so that commands can tell. */
  holdServerLock(database: C): Promise<ServerLock>;
  /** A consistent, owner-only copy of the store in a new `file`, while it serves. */
  backup(dataSource: DataSource, file: string): Promise<void>;
  /** Once migrated, how a server (not a command) uses the connection. */
  serve(dataSource: DataSource): void;
}
