/**
 * Operator commands for the store itself, on the same store as the server (DATABASE_URL); they
 * run from the build, so they work where dev dependencies are not installed:
 *   node dist/cli/store.js status    (or npm run store -- status)
 *   node dist/cli/store.js migrate
 *   node dist/cli/store.js revert
 *   node dist/cli/store.js backup FILE
 */
import '../node-version';
import '../compile-cache';
import 'reflect-metadata';
import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import {
  applyPendingMigrations,
  backupStore,
  describeStore,
  migrationStatus,
  openStore,
  revertLastMigration,
} from '../database/open-store';
import { commandConfig, OperatorError, runCommand, UsageError } from './command';

const USAGE = `usage: node dist/cli/store.js <command>   (or: npm run store -- <command>)

  status    the store DATABASE_URL names, and its applied and pending migrations
  migrate   apply the pending migrations (the server also does this when it starts)
  revert    revert the last applied migration (before running the version before it)
  backup FILE
            SQLite: copy the store, while the server runs, to FILE (new, owner-only);
            PostgreSQL: says how to use pg_dump

The store is the server's: DATABASE_URL, from the environment or .env.`;

const list = (names: readonly string[]): string => (names.length === 0 ? 'none' : names.join(', '));

/** Opens the store without migrating it, for `work`. */
async function withStore(database: DatabaseConfig, work: (dataSource: DataSource) => Promise<void>): Promise<void> {
  const dataSource = await openStore(database, 'command', { migrate: false });
  try {
    await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

async function main(args: readonly string[]): Promise<void> {
  const [command, ...rest] = args;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const arity: Record<string, number> = { status: 0, migrate: 0, revert: 0, backup: 1 };
  if (command === undefined || arity[command] !== rest.length) throw new UsageError(USAGE);
  const { database } = commandConfig();
  const where = describeStore(database);

  if (command === 'status') {
    await withStore(database, async (dataSource) => {
      const { applied, pending } = await migrationStatus(dataSource);
      process.stdout.write(`store: ${where}\napplied: ${list(applied)}\npending: ${list(pending)}\n`);
    });
  } else if (command === 'migrate') {
    await withStore(database, async (dataSource) => {
      const { pending } = await migrationStatus(dataSource);
      await applyPendingMigrations(database, dataSource);
      process.stdout.write(`store: ${where}\napplied now: ${list(pending)}\n`);
    });
  } else if (command === 'backup') {
    await withStore(database, async (dataSource) => {
      await backupStore(database, dataSource, rest[0]);
      process.stdout.write(`store: ${where}\nbacked up to: ${rest[0]}\n`);
    });
  } else {
    await withStore(database, async (dataSource) => {
      const { applied } = await migrationStatus(dataSource);
      const last = applied.at(-1);
      if (last === undefined) throw new OperatorError(`${where} has no migration to revert`);
      await revertLastMigration(database, dataSource);
      process.stdout.write(`store: ${where}\nreverted: ${last}\n`);
    });
  }
}

runCommand('store', () => main(process.argv.slice(2)));
