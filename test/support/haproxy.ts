import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort, sleep } from './sockets';
import { dyingWithTest } from './spawn';

export const RECIPE = join(process.cwd(), 'deploy/haproxy/plant-store.cfg');

export interface Proxy {
  url: string;
  port: number;
  /** Each instance's state as HAProxy sees it: UP, DOWN, MAINT… */
  states(): Promise<Record<string, string>>;
  /** Resolves once HAProxy sees `server` (a or b) in `state`; throws if it has not within a minute. */
  seen(server: string, state: string): Promise<void>;
  stop(): Promise<void>;
}

/** Debian's HAProxy running the recipe's file as written, in front of the instances at `a` and `b`. */
export async function startProxy(a: number, b: number): Promise<Proxy> {
  const [port, statsPort] = [await freePort(), await freePort()];
  let stderr = '';
  const child: ChildProcess = spawn(...dyingWithTest('haproxy', ['-f', RECIPE, '-db']), {
    env: {
      ...process.env,
      PLANT_STORE_PROXY: `127.0.0.1:${port}`,
      PLANT_STORE_A: `127.0.0.1:${a}`,
      PLANT_STORE_B: `127.0.0.1:${b}`,
      PLANT_STORE_PROXY_STATS: `127.0.0.1:${statsPort}`,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const states = async (): Promise<Record<string, string>> => {
    const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
    const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n');
    const column = header.split(',').indexOf('status');
    return Object.fromEntries(
      rows
        .map((row) => row.split(','))
        .filter(([proxy, server]) => proxy === 'instances' && server !== 'BACKEND')
        .map((fields) => [fields[1], fields[column]]),
    );
  };
  const seen = async (server: string, state: string): Promise<void> => {
    // Never what a test measures: only so that a test that fails ends, and its load with it.
    const giveUp = Date.now() + 60_000;
    let now: Record<string, string> = {};
    while (Date.now() < giveUp) {
      if (child.exitCode !== null) throw new Error(`haproxy exited:\n${stderr}`);
      now = await states().catch((): Record<string, string> => ({}));
      if (now[server] === state) return;
      await sleep(50);
    }
    throw new Error(`HAProxy did not see ${server} ${state} (it sees ${JSON.stringify(now)})`);
  };
  const proxy: Proxy = {
    url: `http://127.0.0.1:${port}`,
    port,
    states,
    seen,
    async stop() {
      child.kill('SIGKILL');
      await exited;
    },
  };
  await seen('a', 'UP');
  await seen('b', 'UP');
  return proxy;
}
