/** `node dist/cli/store.js status | migrate | revert [--drop-data] | backup FILE`, from the build: no dev dependencies needed. */
import '../node-version';
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { DataSource, QueryRunner } from 'typeorm';
import { APP_CONFIG, type AppConfig, configModule, type DatabaseConfig } from '../config/configuration';
import { StoreKindModule } from '../database/database.module';
import { migrationStatus, openStore } from '../database/open-store';
import { STORE_KIND, type StoreKind } from '../database/store-kind';
import { OperatorError, runCommand, UsageError } from './command';
import { ENTITIES } from '../entities';

/** The store's kind and the configuration: these commands open the store themselves, each its own way. */
@Module({ imports: [configModule, StoreKindModule] })
class StoreCommandModule {}

const USAGE = `usage: node dist/cli/store.js <command>   (or: npm run store -- <command>)

  status                the store DATABASE_URL names, its applied and pending migrations
  migrate               apply the pending migrations (a starting server does this too)
  revert [--drop-data]  revert the last applied migration; where that would drop rows or values,
                        say how many and change nothing, unless --drop-data throws them away
  backup FILE           SQLite: copy the store, while it serves, to FILE (new, owner-only);
                        PostgreSQL: say how to use pg_dump

The store is the server's: DATABASE_URL, from the environment or .env.`;

const list = (names: readonly string[]): string => (names.length === 0 ? 'none' : names.join(', '));

const DROP_DATA = '--drop-data';

/** Data a revert would throw away: a table's rows, or a column's values (those not null). */
interface Dropped {
  table: string;
  column?: string;
  count: number;
}

async function tablesOf(dataSource: DataSource, runner: QueryRunner): Promise<Map<string, string[]>> {
  const bookkeeping = dataSource.options.migrationsTableName ?? 'migrations';
  const tables = await runner.getTables();
  return new Map(
    tables
      .filter((table) => table.name !== bookkeeping && table.name !== 'typeorm_metadata')
      .map((table) => [table.name, table.columns.map((column) => column.name)]),
  );
}

/** What reverting the last migration would drop, found by running its `down` in a rolled-back transaction. */
async function lostByRevert(
  dataSource: DataSource,
  runner: QueryRunner,
): Promise<{ migration: string; dropped: Dropped[] } | undefined> {
  const { applied } = await migrationStatus(dataSource);
  const name = applied.at(-1);
  if (name === undefined) return undefined;
  const migration = dataSource.migrations.find((candidate) => candidate.name === name);
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
  await runner.startTransaction();
  try {
    await migration.down(runner);
    after = await tablesOf(dataSource, runner);
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
    for (const column of columns.filter((name) => !kept.includes(name))) {
      dropped.push({ table, column, count: await count(table, column) });
    }
  }
  return { migration: name, dropped };
}

/** `plant (2 rows)`, or for a column of a table that stays, `plant.note (1 value)`. */
function describeDropped({ table, column, count }: Dropped): string {
  const unit = column === undefined ? 'row' : 'value';
  return `${column === undefined ? table : `${table}.${column}`} (${count} ${count === 1 ? unit : `${unit}s`})`;
}

async function withStore(
  kind: StoreKind,
  database: DatabaseConfig,
  work: (dataSource: DataSource) => Promise<void>,
  anyVersion = false,
): Promise<void> {
  const dataSource = await openStore(database, ENTITIES, 'command', { kind, migrate: false, anyVersion });
  try {
    await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

async function main(args: readonly string[]): Promise<void> {
  const [command, ...rest] = args;
  if (['--help', '-h', 'help'].includes(command)) return void process.stdout.write(`${USAGE}\n`);
  const arity: Record<string, number> = { status: 0, migrate: 0, revert: 0, backup: 1 };
  const dropData = command === 'revert' && rest.length === 1 && rest[0] === DROP_DATA;
  if (command === undefined || arity[command] !== rest.length - (dropData ? 1 : 0)) throw new UsageError(USAGE);
  const app = await NestFactory.createApplicationContext(StoreCommandModule, { logger: false, abortOnError: false });
  const { database } = app.get<AppConfig>(APP_CONFIG);
  const kind = app.get<StoreKind>(STORE_KIND);
  await app.close();
  const where = kind.describe(database);

  if (command === 'status') {
    await withStore(
      kind,
      database,
      async (dataSource) => {
        const { applied, pending, unknown } = await migrationStatus(dataSource);
        const ahead =
          unknown.length === 0 ? '' : `unknown to this version (applied by a newer one): ${list(unknown)}\n`;
        process.stdout.write(`store: ${where}\napplied: ${list(applied)}\npending: ${list(pending)}\n${ahead}`);
      },
      true,
    );
  } else if (command === 'migrate') {
    await withStore(kind, database, async (dataSource) => {
      const { pending } = await migrationStatus(dataSource);
      await kind.migrate(dataSource, database);
      process.stdout.write(`store: ${where}\napplied now: ${list(pending)}\n`);
    });
  } else if (command === 'backup') {
    await withStore(kind, database, async (dataSource) => {
      await kind.backup(dataSource, rest[0]);
      process.stdout.write(`store: ${where}\nbacked up to: ${rest[0]}\n`);
    });
  } else {
    await withStore(kind, database, async (dataSource) => {
      let reverted = '';
      let dropped: Dropped[] = [];
      await kind.revert(dataSource, database, async (runner) => {
        const lost = await lostByRevert(dataSource, runner);
        if (lost === undefined) throw new OperatorError(`${where} has no migration to revert`);
        reverted = lost.migration;
        dropped = lost.dropped.filter(({ count }) => count > 0);
        if (dropped.length > 0 && !dropData) {
          throw new OperatorError(
            `reverting ${lost.migration} would drop ${dropped.map(describeDropped).join(', ')} in ${where}; nothing was changed. ` +
              `Back the store up first; to revert anyway, throwing them away: node dist/cli/store.js revert ${DROP_DATA}`,
          );
        }
      });
      const lines = dropped.map((what) => `\ndropped: ${describeDropped(what)}`);
      process.stdout.write(`store: ${where}\nreverted: ${reverted}${lines.join('')}\n`);
    });
  }
}

runCommand('store', () => main(process.argv.slice(2)));
