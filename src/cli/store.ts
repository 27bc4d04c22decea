/**
 * Operator commands for the store itself, on the same store as the server (DATABASE_URL); they
 * run from the build, so they work where dev dependencies are not installed:
 *   node dist/cli/store.js status    (or npm run store -- status)
 *   node dist/cli/store.js migrate
 *   node dist/cli/store.js revert
 */
import '../node-version';
import 'reflect-metadata';
import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import {
  applyPendingMigrations,
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
  if (!['status', 'migrate', 'revert'].includes(command ?? '') || rest.length > 0) throw new UsageError(USAGE);
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
