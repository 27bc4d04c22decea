import { join } from 'node:path';
import type { DataSource, DataSourceOptions, QueryRunner } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import type { StoreCheck } from './store-outage';

/** The kind of store DATABASE_URL names (a StoreKind), provided once by DatabaseModule. */
export const STORE_KIND = 'STORE_KIND';

/** The tables: for the server, those its modules name to TypeORM (`forFeature`). */
export type StoreEntities = DataSourceOptions['entities'];

export type HeldLock = { release(): Promise<void> };

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

/** How a kind's driver fails and waits, as the store's users see it. */
export interface StoreDialect {
  /** Another writer holds what a write needs: nothing was written, and it may go through soon. */
  isBusy(error: unknown): boolean;
  /** Says who held it, for the answer once a write has waited too long. */
  busyWith: string;
  /** The driver's error, as a StoreUnavailableError where it means the store cannot take a write now. */
  failure(error: unknown): unknown;
  /** How many transactions a process runs at once: SQLite's one connection runs one. */
  transactionsAtOnce: number;
  /** Whether a read needs a transaction to carry the store's bounds (PostgreSQL's are SET LOCAL). */
  readsInTransaction: boolean;
  /** A server that stopped answering cannot fire its own bounds: past this, a wait is given up. */
  answerWaitMs?: number;
  /** Nothing of the server's bounds a commit: past this after its statements, it is given up. */
  commitWaitMs?: number;
}

/** What differs between SQLite and PostgreSQL in opening and using a store. */
export interface StoreKind<C extends DatabaseConfig = DatabaseConfig> extends StoreDialect {
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
  holdServerLock(database: C): Promise<HeldLock>;
  /** A consistent, owner-only copy of the store in a new `file`, while it serves. */
  backup(dataSource: DataSource, file: string): Promise<void>;
  /** Once migrated, how a server (not a command) uses the connection. */
  serve(dataSource: DataSource): Promise<void>;
  /** What the readiness probe, and the end of an outage, look at. */
  storeCheck(dataSource: DataSource): StoreCheck;
  /** A server's helper beside the store, started and stopped with it (SQLite's checkpointer thread). */
  companion?(dataSource: DataSource): object;
}
