import { DataSource, MigrationExecutor } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import { POSTGRES } from './postgres/postgres-kind';
import { SQLITE } from './sqlite/sqlite-kind';
import { isCompatible, type StoreClient, type StoreEntities, type StoreKind } from './store-kind';

/**
 * The kind DATABASE_URL names: its options, migrations, locks and backup. Decided here, for the
 * application by DatabaseModule's STORE_KIND provider, and for the TypeORM CLI (`ormconfig.ts`).
 */
export function storeKind(database: DatabaseConfig): StoreKind {
  return { sqlite: SQLITE, postgres: POSTGRES }[database.type];
}

/** The store DATABASE_URL names could not be opened; the message is the operator's one line. */
export class StoreOpenError extends Error {
  constructor(where: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`DATABASE_URL: cannot open the ${where}: ${reason}`, { cause });
    this.name = 'StoreOpenError';
  }
}

/** A newer version's compatible migrations are no obstacle (a rolling upgrade); a breaking one refuses the store. */
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

/** Opens the store and applies pending migrations; fails fast, as a wrong URL does not become right by waiting. */
export async function openStore(
  database: DatabaseConfig,
  entities: StoreEntities,
  client: StoreClient = 'command',
  {
    kind = storeKind(database),
    migrate = true,
    migrated,
    anyVersion = false,
  }: {
    /** Given by DatabaseModule's STORE_KIND; decided from DATABASE_URL where there is none (a test's store). */
    kind?: StoreKind;
    migrate?: boolean;
    migrated?: (names: string[]) => void;
    /** Only to look (`store status`): a store ahead of this version is opened, not refused. */
    anyVersion?: boolean;
  } = {},
): Promise<DataSource> {
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
    if (client === 'server') await kind.serve(dataSource);
    return dataSource;
  } catch (error) {
    if (dataSource?.isInitialized) await dataSource.destroy().catch(() => undefined);
    throw new StoreOpenError(kind.describe(database), error);
  }
}

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
