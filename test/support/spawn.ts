import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

const SETPRIV = '/usr/bin/setpriv';

/**
 * `command` run so that it dies with the test's process (the kernel's parent-death signal, kept
 * across exec), however the test ends: a failing or killed test leaves no process running.
 */
export function dyingWithTest(command: string, args: readonly string[]): [string, string[]] {
  return existsSync(SETPRIV) ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', command, ...args]] : [command, [...args]];
}

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (bounded by `timeoutMs`) and collects what it printed. */
export function run(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
  cwd?: string,
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(...dyingWithTest(command, args), {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not finish in ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
