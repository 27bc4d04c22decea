/** Token commands; pending migrations run first, so they work on a fresh store and beside the server. */
import '../node-version';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { TOKEN_NAME_RULE, TokenNameError, TokensService } from '../auth/tokens.service';
import { commandConfig, OperatorError, runCommand, UsageError } from './command';
import { CommandModule } from './command.module';

const USAGE = `usage: npm run token -- <command>

  create <name>   create a token and print it alone on the last line (shown once)
  list            name, creation time and state of every token; never a secret
  revoke <name>   revoke it; the next request with it is refused

Names are ${TOKEN_NAME_RULE}, and are never reused.
The store is the server's: DATABASE_URL, from the environment or .env.`;

async function main(args: readonly string[]): Promise<void> {
  const [command, name, ...rest] = args;
  if (command === undefined) throw new UsageError(USAGE);
  if (['--help', '-h', 'help'].includes(command)) return void process.stdout.write(`${USAGE}\n`);
  const needsName = command === 'create' || command === 'revoke';
  if (!['create', 'list', 'revoke'].includes(command)) throw new UsageError(`unknown command "${command}"\n${USAGE}`);
  if ((needsName && (name === undefined || rest.length > 0)) || (!needsName && name !== undefined)) {
    throw new UsageError(USAGE);
  }

  const { database } = commandConfig();
  if (database.type === 'sqlite' && database.path === ':memory:') {
    throw new UsageError(
      'DATABASE_URL is sqlite::memory:, a store that lives only inside one process: a token made here would be ' +
        "gone when this command ends, and the server's own store would never see it. Issue tokens on a file " +
        '(sqlite:data/plant-store.sqlite) or on PostgreSQL.',
    );
  }
  const app = await NestFactory.createApplicationContext(CommandModule, { logger: false, abortOnError: false });
  const out = (line: string): boolean => process.stdout.write(`${line}\n`);
  try {
    const tokens = app.get(TokensService);
    if (command === 'create') {
      let token: string;
      try {
        token = await tokens.create(name);
      } catch (error) {
        throw error instanceof TokenNameError ? new OperatorError(error.message) : error;
      }
      out(`Created token "${name}". Store it now: it is shown only once.`);
      out(token);
    } else if (command === 'revoke') {
      const result = await tokens.revoke(name);
      if (result === undefined) throw new OperatorError(`no token named "${name}"`);
      out(
        result.outcome === 'revoked'
          ? `Revoked token "${name}".`
          : `Token "${name}" was already revoked, at ${result.at}; nothing changed.`,
      );
    } else {
      const rows = await tokens.list();
      if (rows.length === 0) out('No tokens yet. Create one with: npm run token -- create <name>');
      for (const row of rows) {
        const state = row.revokedAt === null ? 'active' : `revoked ${row.revokedAt}`;
        out(`${row.name}\t${row.createdAt}\t${state}`);
      }
    }
  } finally {
    await app.close();
  }
}

runCommand('token', () => main(process.argv.slice(2)));
