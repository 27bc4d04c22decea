import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, createReadStream, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { dyingWithTest, run } from './spawn';

const ROOT = process.cwd();
export const MAIN = join(ROOT, 'dist/main.js');
export const TOKEN_CLI = join(ROOT, 'dist/cli/token.js');

export interface ServerProcess {
  child: ChildProcess;
  /** What the test reads the server's stdout from; pause it to stop reading. */
  stdout: Readable;
  port: number;
  url: string;
  /** Every line the server wrote to stdout so far. */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<number | string>;
}

/**
 * Where the server's stdout goes: `socket`, Node's default for a child (a socket pair, which
 * this kernel lets buffer megabytes unread), or `pipe`, a real pipe (a FIFO) as a shell,
 * systemd or a container runtime gives a service, which holds 64 KB.
 */
export type StdoutKind = 'socket' | 'pipe';

/** A FIFO for the server's stdout: the descriptor to hand it, the stream to read, a clean-up. */
function stdoutPipe(): { fd: number; stream: Readable; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-stdout-'));
  const fifo = join(dir, 'stdout');
  execFileSync('mkfifo', [fifo]);
  // Read and write, so that opening it does not wait for a reader; the child gets a copy.
  const fd = openSync(fifo, 'r+');
  return { fd, stream: createReadStream(fifo), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts the built server (`node dist/main.js`, as `npm run start:prod` does, less its memory
 * flags) on a free port and resolves once it listens. The projects that run it build `dist/` first
 * (jest.build-setup.mjs).
 * `wrapper`: a command that runs it (`prlimit --nofile=…`), which must exec it in its place.
 */
export function startServer(
  env: Record<string, string>,
  timeoutMs = 20_000,
  cwd?: string,
  stdoutKind: StdoutKind = 'socket',
  main = MAIN,
  wrapper: readonly string[] = [],
): Promise<ServerProcess> {
  const pipe = stdoutKind === 'pipe' ? stdoutPipe() : undefined;
  const [command, ...args] = [...wrapper, process.execPath, main];
  const child = spawn(...dyingWithTest(command, args), {
    cwd,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', pipe?.fd ?? 'pipe', 'pipe'],
  });
  if (pipe !== undefined) closeSync(pipe.fd);
  const out = pipe?.stream ?? child.stdout!;
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  void exited.then(() => pipe?.remove());
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    let listening = false;
    out.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      // Searched until found only: otherwise a server that logs megabytes has all of it searched
      // again for every chunk, and its reader falls behind.
      if (listening) return;
      // The public port: a metrics listener says its own port first.
      const match = /"port":(\d+),"msg":"Plant Store listening/.exec(stdout);
      if (match) {
        listening = true;
        clearTimeout(timer);
        const port = Number(match[1]);
        resolve({ child, stdout: out, port, url: `http://127.0.0.1:${port}`, output: () => stdout, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${stdout}\n${stderr}`));
    });
  });
}

/** Issues a token with the built token command on the given store. */
export async function createToken(databaseUrl: string, name: string): Promise<string> {
  const result = await run(process.execPath, [TOKEN_CLI, 'create', name], { DATABASE_URL: databaseUrl });
  if (result.code !== 0) throw new Error(`token create failed: ${result.stderr}`);
  return result.stdout.trimEnd().split('\n').at(-1)!;
}

/** The built server under `prlimit`, with `descriptors` as its limit of open files. */
export function startServerWithDescriptors(env: Record<string, string>, descriptors: number): Promise<ServerProcess> {
  const prlimit = ['prlimit', `--nofile=${descriptors}:${descriptors}`];
  return startServer(env, 20_000, undefined, 'socket', undefined, prlimit);
}

export async function stopServer(server: ServerProcess): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  await server.exited;
}
