/** `node dist/cli/store.js status | migrate | revert [--drop-data] | backup FILE`, from the build: no dev dependencies needed. */
import '../node-version';
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { Command, Option } from 'nest-commander';
import type { DataSource, QueryRunner } from 'typeorm';
import { APP_CONFIG, type AppConfig, configModule, type DatabaseConfig } from '../config/configuration';
import { StoreKindModule } from '../database/database.module';
import { migrationStatus, openStore } from '../database/open-store';
import { STORE_KIND, type StoreKind } from '../database/store-kind';
import { ENTITIES } from '../entities';
import { OperatorCommand, OperatorError, runCommand } from './command';

const USAGE = `usage: node dist/cli/store.js <command>   (or: npm run store -- <command>)

  status                the store DATABASE_URL names, its applied and pending migrations
  migrate               apply the pending migrations (a starting server does this too)
  revert [--drop-data]  revert the last applied migration; where that would drop rows or values,
                        say how many and change nothing, unless --drop-data throws them away
  backup FILE           SQLite: copy the store, while it serves, to FILE (new, owner-only);
                        PostgreSQL: say how to use pg_dump

The store is the server's: DATABASE_URL, from the environment or .env.`;

const list = (names: readonly string[]): string => (names.length === 0 ? 'none' : names.join(', '));

/** Each table but the bookkeeping ones, with its columns. */
async function tablesOf(dataSource: DataSource, runner: QueryRunner): Promise<Map<string, string[]>> {
  const bookkeeping = [dataSource.options.migrationsTableName ?? 'migrations', 'typeorm_metadata'];
  const tables = (await runner.getTables()).filter(({ name }) => !bookkeeping.includes(name));
  return new Map(tables.map((table) => [table.name, table.columns.map((column) => column.name)]));
}

/** What reverting the last migration would drop (`plant (2 rows)`, `plant.note (1 value)`), found by running its `down` in a rolled-back transaction. */
async function lostByRevert(
  dataSource: DataSource,
  runner: QueryRunner,
): Promise<{ migration: string; dropped: string[] } | undefined> {
  const migration = (await migrationStatus(dataSource)).applied.at(-1);
  if (migration === undefined) return undefined;
  const known = dataSource.migrations.find((candidate) => candidate.name === migration);
  if (known === undefined) return { migration, dropped: [] };
  const before = await tablesOf(dataSource, runner);
  let after: Map<string, string[]>;
  await runner.startTransaction();
  try {
    await known.down(runner);
    after = await tablesOf(dataSource, runner);
  } finally {
    await runner.rollbackTransaction();
  }
  const dropped: string[] = [];
  const count = async (table: string, column?: string): Promise<void> => {
    const [row] = (await runner.query(
      `SELECT count(${column === undefined ? '*' : `"${column}"`}) AS "count" FROM "${table}"`,
    )) as { count: number | string }[];
    const [n, unit] = [Number(row?.count ?? 0), column === undefined ? 'row' : 'value'];
    if (n > 0)
      dropped.push(`${column === undefined ? table : `${table}.${column}`} (${n} ${n === 1 ? unit : `${unit}s`})`);
  };
  for (const [table, columns] of before) {
    const kept = after.get(table);
    if (kept === undefined) await count(table);
    else for (const column of columns.filter((name) => !kept.includes(name))) await count(table, column);
  }
  return { migration, dropped };
}

/** The store's kind and the configuration: these commands open the store themselves, each its own way. */
@Module({ imports: [configModule, StoreKindModule] })
class StoreCommandModule {}

interface Opened {
  dataSource: DataSource;
  kind: StoreKind;
  database: DatabaseConfig;
  where: string;
}

abstract class StoreCommand extends OperatorCommand {
  /** The store DATABASE_URL names, of the kind STORE_KIND says, opened unmigrated (`anyVersion`: only to look). */
  protected async opened(work: (store: Opened) => Promise<void>, anyVersion = false): Promise<void> {
    const get = await this.load(() => StoreCommandModule);
    const [{ database }, kind] = [get<AppConfig>(APP_CONFIG), get<StoreKind>(STORE_KIND)];
    const dataSource = await openStore(database, ENTITIES, 'command', { kind, migrate: false, anyVersion });
    try {
      await work({ dataSource, kind, database, where: kind.describe(database) });
    } finally {
      await dataSource.destroy();
    }
  }
}

@Command({ name: 'status' })
class Status extends StoreCommand {
  run(): Promise<void> {
    return this.opened(async ({ dataSource, where }) => {
      const { applied, pending, unknown } = await migrationStatus(dataSource);
      const ahead = unknown.length === 0 ? '' : `unknown to this version (applied by a newer one): ${list(unknown)}\n`;
      process.stdout.write(`store: ${where}\napplied: ${list(applied)}\npending: ${list(pending)}\n${ahead}`);
    }, true);
  }
}

@Command({ name: 'migrate' })
class Migrate extends StoreCommand {
  run(): Promise<void> {
    return this.opened(async ({ dataSource, kind, database, where }) => {
      const { pending } = await migrationStatus(dataSource);
      await kind.migrate(dataSource, database);
      process.stdout.write(`store: ${where}\napplied now: ${list(pending)}\n`);
    });
  }
}

@Command({ name: 'backup', arguments: '<file>' })
class Backup extends StoreCommand {
  run([file]: string[]): Promise<void> {
    return this.opened(async ({ dataSource, kind, where }) => {
      await kind.backup(dataSource, file);
      process.stdout.write(`store: ${where}\nbacked up to: ${file}\n`);
    });
  }
}

@Command({ name: 'revert' })
class Revert extends StoreCommand {
  @Option({ flags: '--drop-data' })
  dropData(): boolean {
    return true;
  }

  run(_: string[], { dropData = false }: { dropData?: boolean }): Promise<void> {
    return this.opened(async ({ dataSource, kind, database, where }) => {
      let lost: Awaited<ReturnType<typeof lostByRevert>>;
      await kind.revert(dataSource, database, async (runner) => {
        lost = await lostByRevert(dataSource, runner);
        if (lost === undefined) throw new OperatorError(`${where} has no migration to revert`);
        if (lost.dropped.length > 0 && !dropData) {
          throw new OperatorError(
            `reverting ${lost.migration} would drop ${lost.dropped.join(', ')} in ${where}; nothing was changed. ` +
              'Back the store up first; to revert anyway, throwing them away: node dist/cli/store.js revert --drop-data',
          );
        }
      });
      const { migration = '', dropped = [] } = lost ?? {};
      process.stdout.write(
        `store: ${where}\nreverted: ${migration}${dropped.map((what) => `\ndropped: ${what}`).join('')}\n`,
      );
    });
  }
}

@Module({ providers: [Status, Migrate, Backup, Revert] })
class StoreCli {}

runCommand('store', USAGE, StoreCli);
