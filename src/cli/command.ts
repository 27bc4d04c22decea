import { readFileSync, readlinkSync } from 'node:fs';
import { Inject, type Type } from '@nestjs/common';
import { LazyModuleLoader } from '@nestjs/core';
import { CommandFactory, CommandRunner } from 'nest-commander';
import { DataSource } from 'typeorm';
import { ConfigError } from '../config/configuration';
import { StoreOpenError } from '../database/open-store';
import { StoreCommandError, StoreCommandFailure } from '../database/store-kind';
import { CommandModule } from './command.module';

/** A mistake in how a command was called: its message is printed, and the exit code is 2. */
export class UsageError extends Error {}

export class OperatorError extends Error {}

/** How commander ends a parse (help shown, a wrong command line), thrown rather than exiting. */
type CommanderExit = Error & { code: string; exitCode: number };
const commanderExit = (error: unknown): error is CommanderExit =>
  error instanceof Error && 'exitCode' in error && String((error as CommanderExit).code).startsWith('commander.');

/**
 * A command's modules load as it runs: `--help` or a wrong command line reads no configuration
 * and opens no store. Each command (not only the program) throws instead of exiting.
 */
export abstract class OperatorCommand extends CommandRunner {
  @Inject(LazyModuleLoader) private readonly modules!: LazyModuleLoader; // a property: no constructor to pass on

  override setCommand(command: Parameters<CommandRunner['setCommand']>[0]): this {
    return super.setCommand(command.exitOverride().allowExcessArguments(false));
  }

  /** A getter of what `module` and the modules it imports provide. */
  protected async load(
    module: Parameters<LazyModuleLoader['load']>[0],
  ): Promise<<T>(token: Type<T> | string | symbol) => T> {
    const loaded = await this.modules.load(module);
    return (token) => loaded.get(token, { strict: false });
  }

  /** The server's store, migrated, and its features (CommandModule); the store closed after `work`. */
  protected async withStore<T>(work: (get: <S>(type: Type<S>) => S) => Promise<T>): Promise<T> {
    const get = await this.load(() => CommandModule);
    try {
      return await work(get);
    } finally {
      await get(DataSource).destroy(); // Nest runs no lifecycle hook of a lazily loaded module
    }
  }
}

/** Started with stdout closed (`>&-`): Node opens /dev/null read-write in its place, a shell's `>` opens it write-only. */
export function standardOutputClosed(): boolean {
  try {
    if (readlinkSync('/proc/self/fd/1') !== '/dev/null') return false;
    const flags = /^flags:\s*(\d+)$/m.exec(readFileSync('/proc/self/fdinfo/1', 'utf8'))?.[1];
    return flags !== undefined && (parseInt(flags, 8) & 0o3) === 0o2; // O_ACCMODE is O_RDWR
  } catch {
    return false;
  }
}

/** `process.exit` alone drops what is still queued for a slow pipe. */
function exitAfterStdout(code: number): void {
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}

const SAID = [UsageError, OperatorError, ConfigError, StoreCommandError, StoreCommandFailure, StoreOpenError];

/**
 * Runs `cli`'s commands on the command line: exit 0; 2 for a mistake in what was asked (said by
 * `misuse` when commander found it); 1 for anything else; one line `name: message` on stderr for
 * an error; 141 (as if killed by SIGPIPE) when stdout's reader went away (`| head -1`).
 */
export function runCommand(name: string, usage: string, cli: Type, misuse = (_: CommanderExit) => usage): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(128 + 13);
    process.stderr.write(`${name}: cannot write to stdout: ${error.message}\n`);
    process.exit(1);
  });
  const rethrow = (error: Error): never => {
    throw error;
  };
  CommandFactory.run(cli, {
    logger: false,
    abortOnError: false,
    errorHandler: rethrow,
    serviceErrorHandler: rethrow,
    // Help is the usage as written; commander's own messages give way to our one line.
    helpConfiguration: { formatHelp: () => `${usage}\n` },
    outputConfiguration: { writeErr: () => undefined, outputError: () => undefined },
  }).then(
    // A command that completed but found something to report (a skipped line) sets exitCode.
    () => exitAfterStdout(Number(process.exitCode ?? 0)),
    (thrown: unknown) => {
      if (commanderExit(thrown) && thrown.exitCode === 0) return exitAfterStdout(0); // help, on stdout
      const error = commanderExit(thrown) ? new UsageError(misuse(thrown)) : thrown;
      const known = SAID.some((type) => error instanceof type);
      const text = error instanceof Error ? (known ? error.message : (error.stack ?? error.message)) : String(error);
      process.stderr.write(`${name}: ${text}\n`);
      const failedOnItsWay = error instanceof StoreOpenError || error instanceof StoreCommandFailure;
      exitAfterStdout(known && !failedOnItsWay ? 2 : 1);
    },
  );
}
