import { ConfigError, loadConfig, readEnvironment } from '../config/configuration';
import { StoreOpenError } from '../database/data-source-options';

/** A mistake in how a command was called: its message is printed, and the exit code is 2. */
export class UsageError extends Error {}

/** Errors whose message is the whole story for the operator (no stack). */
export class OperatorError extends Error {}

/** The store settings, read the way the server reads them (environment over `.env`). */
export function commandConfig() {
  return loadConfig(readEnvironment());
}

/**
 * Runs an operator command: exit 0 on success, 2 for a mistake in what was asked (usage, a bad
 * or unknown name), 1 for anything else (the store, the unexpected); one line on stderr says
 * why, with a stack only for the unexpected.
 */
export function runCommand(name: string, main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      const known =
        error instanceof UsageError ||
        error instanceof OperatorError ||
        error instanceof ConfigError ||
        error instanceof StoreOpenError;
      const text = known ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error);
      process.stderr.write(`${name}: ${text}\n`);
      process.exit(known && !(error instanceof StoreOpenError) ? 2 : 1);
    },
  );
}
