import { readFileSync, readlinkSync } from 'node:fs';
import { ConfigError, loadConfig, readEnvironment } from '../config/configuration';
import { StoreCommandError, StoreCommandFailure, StoreOpenError } from '../database/open-store';

/** A mistake in how a command was called: its message is printed, and the exit code is 2. */
export class UsageError extends Error {}

/** Errors whose message is the whole story for the operator (no stack). */
export class OperatorError extends Error {}

/** The store settings, read the way the server reads them (environment over `.env`). */
export function commandConfig() {
  return loadConfig(readEnvironment());
}

/**
 * Whether this process was started with its standard output closed (`>&-`). Node never lets a
 * process run with fd 1 closed: it opens /dev/null in its place, read-write, where a shell's
 * `> /dev/null` opens it write-only; so on Linux the two can be told apart by the descriptor's
 * flags. Elsewhere (no /proc), false.
 */
export function standardOutputClosed(): boolean {
  try {
    if (readlinkSync('/proc/self/fd/1') !== '/dev/null') return false;
    const flags = standardOutputFlags();
    return flags !== undefined && (flags & 0o3) === 0o2; // O_ACCMODE is O_RDWR
  } catch {
    return false;
  }
}

/** The open(2) flags of this process's standard output, from /proc (Linux); undefined elsewhere. */
export function standardOutputFlags(): number | undefined {
  try {
    const flags = /^flags:\s*(\d+)$/m.exec(readFileSync('/proc/self/fdinfo/1', 'utf8'))?.[1];
    return flags === undefined ? undefined : parseInt(flags, 8);
  } catch {
    return undefined;
  }
}

/** The exit code of a command whose reader went away (`| head -1`): as if killed by SIGPIPE. */
export const BROKEN_PIPE_EXIT = 128 + 13;

/**
 * Ends the process with `code` once everything written to stdout has left. `process.exit`
 * alone drops what is still queued for a pipe or socket whose reader is slower than the command
 * (a file or a terminal is written at once).
 */
function exitAfterStdout(code: number): void {
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}

/**
 * Runs an operator command: exit 0 on success, 2 for a mistake in what was asked (usage, a bad
 * or unknown name), 1 for anything else (the store, the unexpected); one line on stderr says
 * why, with a stack only for the unexpected. A reader of stdout that goes away before the end
 * ends the command quietly, with BROKEN_PIPE_EXIT.
 */
export function runCommand(name: string, main: () => Promise<void>): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(BROKEN_PIPE_EXIT);
    process.stderr.write(`${name}: cannot write to stdout: ${error.message}\n`);
    process.exit(1);
  });
  main().then(
    // A command that completed but found something to report (a skipped line) sets exitCode.
    () => exitAfterStdout(Number(process.exitCode ?? 0)),
    (error: unknown) => {
      const known =
        error instanceof UsageError ||
        error instanceof OperatorError ||
        error instanceof ConfigError ||
        error instanceof StoreCommandError ||
        error instanceof StoreCommandFailure ||
        error instanceof StoreOpenError;
      const text = known ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error);
      process.stderr.write(`${name}: ${text}\n`);
      const failedOnItsWay = error instanceof StoreOpenError || error instanceof StoreCommandFailure;
      exitAfterStdout(known && !failedOnItsWay ? 2 : 1);
    },
  );
}
