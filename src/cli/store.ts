/** `node dist/cli/store.js status | migrate | revert [--drop-data] | backup FILE`, from the build: no dev dependencies needed. */
import '../node-version';
import 'reflect-metadata';
import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from '../config/configuration';
import { type Dropped, lostByRevert, migrationStatus, openStore, storeKind } from '../database/open-store';
import { commandConfig, OperatorError, runCommand, UsageError } from './command';
import { ENTITIES } from '../entities';

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

/** `plant (2 rows)`, or for a column of a table that stays, `plant.note (1 value)`. */
function describeDropped({ table, column, count }: Dropped): string {
  const unit = column === undefined ? 'row' : 'value';
  return `${column === undefined ? table : `${table}.${column}`} (${count} ${count === 1 ? unit : `${unit}s`})`;
}

async function withStore(
  database: DatabaseConfig,
  work: (dataSource: DataSource) => Promise<void>,
  anyVersion = false,
): Promise<void> {
  const dataSource = await openStore(database, ENTITIES, 'command', { migrate: false, anyVersion });
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
  const { database } = commandConfig();
  const kind = storeKind(database);
  const where = kind.describe(database);

  if (command === 'status') {
    await withStore(
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
    await withStore(database, async (dataSource) => {
      const { pending } = await migrationStatus(dataSource);
      await kind.migrate(dataSource, database);
      process.stdout.write(`store: ${where}\napplied now: ${list(pending)}\n`);
    });
  } else if (command === 'backup') {
    await withStore(database, async (dataSource) => {
      await kind.backup(dataSource, rest[0]);
      process.stdout.write(`store: ${where}\nbacked up to: ${rest[0]}\n`);
    });
  } else {
    await withStore(database, async (dataSource) => {
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
