/**
 * Operator commands for API tokens, on the same store as the server (DATABASE_URL):
 *   npm run token -- create <name>   prints the new token alone on the last line
 *   npm run token -- list            name, creation time and state; never a secret
 *   npm run token -- revoke <name>   refused from the next request on
 * It runs pending migrations first, so it works on a fresh store and while the server runs.
 */
import 'reflect-metadata';
import { TokenNameError, TokensService } from '../auth/tokens.service';
import { ConfigError, loadConfig } from '../config/configuration';
import { dataSourceOptions, openDataSource } from '../database/data-source-options';

const USAGE = 'usage: npm run token -- create <name> | list | revoke <name>';

class UsageError extends Error {}

async function run(args: readonly string[], out: (line: string) => void): Promise<void> {
  const [command, name, ...rest] = args;
  const needsName = command === 'create' || command === 'revoke';
  if (command === undefined || !['create', 'list', 'revoke'].includes(command)) throw new UsageError(USAGE);
  if ((needsName && (name === undefined || rest.length > 0)) || (!needsName && name !== undefined)) {
    throw new UsageError(USAGE);
  }

  const dataSource = await openDataSource(dataSourceOptions(loadConfig(process.env).database));
  try {
    const tokens = new TokensService(dataSource);
    if (command === 'create') {
      const token = await tokens.create(name);
      out(`Created token "${name}". Store it now: it is shown only once.`);
      out(token);
    } else if (command === 'revoke') {
      if (!(await tokens.revoke(name))) throw new UsageError(`no token named "${name}"`);
      out(`Revoked token "${name}".`);
    } else {
      const rows = await tokens.list();
      if (rows.length === 0) out('No tokens yet. Create one with: npm run token -- create <name>');
      for (const row of rows) {
        const state = row.state === 'revoked' ? `revoked ${row.revokedAt ?? ''}` : 'active';
        out(`${row.name}\t${row.createdAt}\t${state}`);
      }
    }
  } finally {
    await dataSource.destroy();
  }
}

run(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`)).then(
  () => process.exit(0),
  (error: unknown) => {
    const known = error instanceof UsageError || error instanceof TokenNameError || error instanceof ConfigError;
    process.stderr.write(`token: ${known ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(known ? 2 : 1);
  },
);
