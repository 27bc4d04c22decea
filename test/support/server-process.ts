import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { run } from './spawn';

const ROOT = process.cwd();
export const MAIN = join(ROOT, 'dist/main.js');
export const TOKEN_CLI = join(ROOT, 'dist/cli/token.js');

export interface ServerProcess {
  child: ChildProcessWithoutNullStreams;
  port: number;
  url: string;
  /** Every line the server wrote to stdout so far. */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<number | string>;
}

/**
 * Starts the built server (`node dist/main.js`, as `npm run start:prod` does) on a free port
 * and resolves once it listens. jest's global setup builds `dist/` first.
 */
export function startServer(env: Record<string, string>, timeoutMs = 20_000, cwd?: string): Promise<ServerProcess> {
  const child = spawn(process.execPath, [MAIN], {
    cwd,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /"port":(\d+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        const port = Number(match[1]);
        resolve({ child, port, url: `http://127.0.0.1:${port}`, output: () => stdout, exited });
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

export async function stopServer(server: ServerProcess): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  await server.exited;
}
