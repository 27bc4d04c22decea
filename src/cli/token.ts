/** Token commands; pending migrations run first, so they work on a fresh store and beside the server. */
import '../node-version';
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { Command } from 'nest-commander';
import { TOKEN_NAME_RULE, TokenNameError, TokensService } from '../auth/tokens.service';
import { APP_CONFIG, type AppConfig, configModule } from '../config/configuration';
import { OperatorCommand, OperatorError, runCommand, UsageError } from './command';

const USAGE = `usage: npm run token -- <command>

  create <name>   create a token and print it alone on the last line (shown once)
  list            name, creation time and state of every token; never a secret
  revoke <name>   revoke it; the next request with it is refused

Names are ${TOKEN_NAME_RULE}, and are never reused.
The store is the server's: DATABASE_URL, from the environment or .env.`;

const out = (line: string): boolean => process.stdout.write(`${line}\n`);

abstract class TokenCommand extends OperatorCommand {
  /** The server's TokensService, on a store that outlives this command. */
  protected async tokens<T>(work: (tokens: TokensService) => Promise<T>): Promise<T> {
    const { database } = (await this.load(() => configModule))<AppConfig>(APP_CONFIG);
    if (database.type === 'sqlite' && database.path === ':memory:') {
      throw new UsageError(
        'DATABASE_URL is sqlite::memory:, a store that lives only inside one process: a token made here would be ' +
          "gone when this command ends, and the server's own store would never see it. Issue tokens on a file " +
          '(sqlite:data/plant-store.sqlite) or on PostgreSQL.',
      );
    }
    return this.withStore((get) => work(get(TokensService)));
  }
}

@Command({ name: 'create', arguments: '<name>' })
class CreateToken extends TokenCommand {
  async run([name]: string[]): Promise<void> {
    const token = await this.tokens((tokens) => tokens.create(name)).catch((error: unknown) => {
      throw error instanceof TokenNameError ? new OperatorError(error.message) : error;
    });
    out(`Created token "${name}". Store it now: it is shown only once.`);
    out(token);
  }
}

@Command({ name: 'revoke', arguments: '<name>' })
class RevokeToken extends TokenCommand {
  async run([name]: string[]): Promise<void> {
    const result = await this.tokens((tokens) => tokens.revoke(name));
    if (result === undefined) throw new OperatorError(`no token named "${name}"`);
    out(
      result.outcome === 'revoked'
        ? `Revoked token "${name}".`
        : `Token "${name}" was already revoked, at ${result.at}; nothing changed.`,
    );
  }
}

@Command({ name: 'list' })
class ListTokens extends TokenCommand {
  async run(): Promise<void> {
    const rows = await this.tokens((tokens) => tokens.list());
    if (rows.length === 0) out('No tokens yet. Create one with: npm run token -- create <name>');
    for (const { name, createdAt, revokedAt } of rows)
      out(`${name}\t${createdAt}\t${revokedAt === null ? 'active' : `revoked ${revokedAt}`}`);
  }
}

@Module({ providers: [CreateToken, RevokeToken, ListTokens] })
class TokenCli {}

// The token command has no option: `-x` is as unknown a command as `frobnicate`.
runCommand('token', USAGE, TokenCli, ({ code, message }) =>
  /unknown(Command|Option)$/.test(code) ? `unknown command "${/'(.*)'/.exec(message)?.[1]}"\n${USAGE}` : USAGE,
);
