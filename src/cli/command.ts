import { readFileSync, readlinkSync } from 'node:fs';
import { ConfigError, loadConfig, readEnvironment } from '../config/configuration';
import { StoreOpenError } from '../database/open-store';
import { StoreCommandError, StoreCommandFailure } from '../database/store-kind';

/** A mistake in how a command was called: its message is printed, and the exit code is 2. */
export class UsageError extends Error {}

export class OperatorError extends Error {}

export function commandConfig() {
  return loadConfig(readEnvironment());
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

/** The exit code of a command whose reader went away (`| head -1`): as if killed by SIGPIPE. */
export const BROKEN_PIPE_EXIT = 128 + 13;

/** `process.exit` alone drops what is still queued for a slow pipe. */
function exitAfterStdout(code: number): void {
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}

/** Exit 0, 2 for a mistake in what was asked, 1 for anything else, with one line on stderr; a closed stdout ends it quietly. */
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
      const said = [UsageError, OperatorError, ConfigError, StoreCommandError, StoreCommandFailure, StoreOpenError];
      const known = said.some((type) => error instanceof type);
      const text = error instanceof Error ? (known ? error.message : (error.stack ?? error.message)) : String(error);
      process.stderr.write(`${name}: ${text}\n`);
      const failedOnItsWay = error instanceof StoreOpenError || error instanceof StoreCommandFailure;
      exitAfterStdout(known && !failedOnItsWay ? 2 : 1);
    },
  );
}
