import { DataSource, type DataSourceOptions, MigrationExecutor, type QueryRunner } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import { POSTGRES } from './postgres/postgres-kind';
import { SQLITE } from './sqlite/sqlite-kind';
export { StoreCommandError, StoreCommandFailure } from './store-command.error';
import { isCompatible } from './migrations/store-migration';
import type { ServerLock, StoreClient, StoreEntities, StoreKind } from './store-kind';

/** What opening each kind of store takes, by the kind DATABASE_URL names. */
const STORE_KINDS: Readonly<Record<DatabaseConfig['type'], StoreKind>> = {
  sqlite: SQLITE,
  postgres: POSTGRES,
};

function kindOf(database: DatabaseConfig): StoreKind {
  return STORE_KINDS[database.type];
}

/**
 * The one description of the store, shared by the Nest app, the operator commands and the
 * TypeORM CLI (`ormconfig.ts`). Schema changes happen only through the migrations, which run
 * on open; never `synchronize`.
 */
export function dataSourceOptions(database: DatabaseConfig, entities: StoreEntities): DataSourceOptions {
  return kindOf(database).options(database, entities);
}

/** The store named by DATABASE_URL could not be opened; the message is the operator's one line. */
export class StoreOpenError extends Error {
  constructor(where: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`DATABASE_URL: cannot open the ${where}: ${reason}`, { cause });
    this.name = 'StoreOpenError';
  }
}

/**
 * A store migrated by a newer version holds migrations this code does not know. Compatible ones
 * (`isCompatible`: they only add what this version never reads) are no obstacle, which is what
 * lets a rolling upgrade's older instances restart; a breaking one could mean rows the newer
 * schema forbids or something this version needs gone, so the store is refused (before this
 * version migrates anything), naming the first breaking migration.
 */
async function refuseBreakingNewerSchema(dataSource: DataSource): Promise<void> {
  const table = dataSource.options.migrationsTableName ?? 'migrations';
  const runner = dataSource.createQueryRunner();
  let applied: string[];
  try {
    if (!(await runner.hasTable(table))) return;
    const rows = (await runner.query(`SELECT "name" FROM "${table}" ORDER BY "timestamp"`)) as { name: string }[];
    applied = rows.map((row) => row.name);
  } finally {
    await runner.release();
  }
  const known = new Set(dataSource.migrations.map((migration) => migration.name));
  const breaking = applied.find((name) => !known.has(name) && !isCompatible(name));
  if (breaking !== undefined) {
    throw new Error(
      `the store is ahead of this version: it has migration ${breaking}, which this version does not ` +
        'know and cannot run beside. Run the newer version, or revert that migration with it first ' +
        '(see "Upgrades" in docs/operations.md)',
    );
  }
}

/**
 * Opens the store and applies pending migrations (unless `migrate` is false: the store command
 * looks first; `migrated` hears which it applied): what the server and the operator commands do
 * first. Fails fast (no retries: a wrong DATABASE_URL does not become right by waiting) with a
 * StoreOpenError that names DATABASE_URL and the cause.
 */
export async function openStore(
  database: DatabaseConfig,
  entities: StoreEntities,
  client: StoreClient = 'command',
  {
    migrate = true,
    migrated,
    anyVersion = false,
  }: {
    migrate?: boolean;
    migrated?: (names: string[]) => void;
    /** Only to look (store.js status): a store ahead of this version is opened, not refused. */
    anyVersion?: boolean;
  } = {},
): Promise<DataSource> {
  const kind = kindOf(database);
  let dataSource: DataSource | undefined;
  try {
    kind.beforeConnect(database);
    dataSource = await new DataSource(kind.options(database, entities)).initialize();
    await kind.check(dataSource);
    if (!anyVersion) await refuseBreakingNewerSchema(dataSource);
    if (migrate) {
      const applied = await kind.migrate(dataSource, database);
      migrated?.(applied);
    }
    if (client === 'server') kind.serve(dataSource);
    return dataSource;
  } catch (error) {
    if (dataSource?.isInitialized) await dataSource.destroy().catch(() => undefined);
    throw new StoreOpenError(kind.describe(database), error);
  }
}

/** Where DATABASE_URL points, for an operator's line (a file path, or a URL without its password). */
export function describeStore(database: DatabaseConfig): string {
  return kindOf(database).describe(database);
}

/**
 * The migrations the store has applied (oldest first), those this version would apply, and
 * those among the applied that this version does not know (a newer version applied them).
 */
export async function migrationStatus(
  dataSource: DataSource,
): Promise<{ applied: string[]; pending: string[]; unknown: string[] }> {
  const executor = new MigrationExecutor(dataSource);
  const applied = (await executor.getExecutedMigrations())
    .sort((a, b) => a.timestamp - b.timestamp)
    .map((migration) => migration.name);
  const pending = await executor.getPendingMigrations();
  const known = new Set(dataSource.migrations.map((migration) => migration.name));
  return {
    applied,
    pending: pending.map((migration) => migration.name),
    unknown: applied.filter((name) => !known.has(name)),
  };
}

/** Data a revert would throw away: a table's rows, or a column's values (those not null). */
export interface Dropped {
  table: string;
  column?: string;
  count: number;
}

/** The store's tables and their columns, as `runner` sees them (the migrations table left out). */
async function tablesOf(dataSource: DataSource, runner: QueryRunner): Promise<Map<string, string[]>> {
  const bookkeeping = dataSource.options.migrationsTableName ?? 'migrations';
  const tables = await runner.getTables();
  return new Map(
    tables
      .filter((table) => table.name !== bookkeeping && table.name !== 'typeorm_metadata')
      .map((table) => [table.name, table.columns.map((column) => column.name)]),
  );
}

/**
 * What reverting the last applied migration would throw away, found by running its `down` on
 * `runner` in a transaction that is rolled back: every table it drops, with its rows, and every
 * column it drops from a table it keeps, with its values (not a column it renames: one that
 * goes while another comes with as many values). So a migration need not say what it drops, and
 * one generated by TypeORM is counted as exactly as a hand-written one.
 */
export async function lostByRevert(
  dataSource: DataSource,
  runner: QueryRunner,
): Promise<{ migration: string; dropped: Dropped[] } | undefined> {
  const { applied } = await migrationStatus(dataSource);
  const name = applied.at(-1);
  if (name === undefined) return undefined;
  const migration = dataSource.migrations.find((candidate) => candidate.name === name);
  // Applied by a newer version: this one cannot run its `down` (TypeORM refuses to revert it).
  if (migration === undefined) return { migration: name, dropped: [] };
  const count = async (table: string, column?: string): Promise<number> => {
    const what = column === undefined ? '*' : `"${column}"`;
    const [row] = (await runner.query(`SELECT count(${what}) AS "count" FROM "${table}"`)) as {
      count: number | string;
    }[];
    return Number(row?.count ?? 0);
  };
  const before = await tablesOf(dataSource, runner);
  let after: Map<string, string[]>;
  /** Values in each column the revert adds to a table it keeps, by table. */
  const added = new Map<string, number[]>();
  await runner.startTransaction();
  try {
    await migration.down(runner);
    after = await tablesOf(dataSource, runner);
    for (const [table, columns] of after) {
      const had = before.get(table);
      if (had === undefined) continue;
      const counts: number[] = [];
      for (const column of columns.filter((name) => !had.includes(name))) counts.push(await count(table, column));
      added.set(table, counts);
    }
  } finally {
    await runner.rollbackTransaction();
  }
  const dropped: Dropped[] = [];
  for (const [table, columns] of before) {
    const kept = after.get(table);
    if (kept === undefined) {
      dropped.push({ table, count: await count(table) });
      continue;
    }
    const renamedTo = added.get(table) ?? [];
    for (const column of columns.filter((name) => !kept.includes(name))) {
      const values = await count(table, column);
      const renamed = renamedTo.indexOf(values);
      if (renamed === -1) dropped.push({ table, column, count: values });
      else renamedTo.splice(renamed, 1);
    }
  }
  return { migration: name, dropped };
}

/** Applies the pending migrations, one process at a time, as opening the store does. */
export function applyPendingMigrations(database: DatabaseConfig, dataSource: DataSource): Promise<string[]> {
  return kindOf(database).migrate(dataSource, database);
}

/**
 * Reverts the last migration the store applied, one process at a time, as migrating is, once no
 * server runs on the store and `approve` (run first, under the same lock) has not thrown.
 */
export function revertLastMigration(
  database: DatabaseConfig,
  dataSource: DataSource,
  approve: (runner: QueryRunner) => Promise<void>,
): Promise<void> {
  return kindOf(database).revert(dataSource, database, approve);
}

/** Held by the server while it runs, so that operators' commands can see it (see StoreKind). */
export function holdServerLock(database: DatabaseConfig): Promise<ServerLock> {
  return kindOf(database).holdServerLock(database);
}

/** Writes a consistent copy of the store to a new, owner-only `file` (SQLite; PostgreSQL refuses, naming pg_dump). */
export function backupStore(database: DatabaseConfig, dataSource: DataSource, file: string): Promise<void> {
  return kindOf(database).backup(dataSource, file);
}
