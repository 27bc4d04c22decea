// The recipe's HAProxy (deploy/haproxy/plant-store.cfg, run as written by Debian's `haproxy`) in
// front of two instances on this machine, for the proxy tests and the bench's storm.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './free-port.mjs';

export const RECIPE = join(process.cwd(), 'deploy/haproxy/plant-store.cfg');

/**
 * HAProxy on a free port in front of the instances on ports `a` and `b`, once it sees both up.
 * `command` may wrap the one it runs (the tests make it die with them).
 */
export async function startProxy(a, b, { command = (name, args) => [name, args] } = {}) {
  const [port, statsPort] = [await freePort(), await freePort()];
  let stderr = '';
  const child = spawn(...command('haproxy', ['-f', RECIPE, '-db']), {
    env: {
      ...process.env,
      PLANT_STORE_PROXY: `127.0.0.1:${port}`,
      PLANT_STORE_A: `127.0.0.1:${a}`,
      PLANT_STORE_B: `127.0.0.1:${b}`,
      PLANT_STORE_PROXY_STATS: `127.0.0.1:${statsPort}`,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr.on('data', (chunk) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  /** The backend's rows of the stats page (/stats;csv), each by its column names. */
  const backend = async () => {
    const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
    const [header, ...lines] = csv.replace(/^# /, '').trim().split('\n');
    const names = header.split(',');
    return lines
      .map((line) => Object.fromEntries(line.split(',').map((value, i) => [names[i], value])))
      .filter((row) => row.pxname === 'instances');
  };
  const states = async () =>
    Object.fromEntries(
      (await backend()).filter((row) => row.svname !== 'BACKEND').map((row) => [row.svname, row.status]),
    );
  const seen = async (server, state) => {
    // Never what a test measures: only so that a run that fails ends, and its load with it.
    const giveUp = Date.now() + 60_000;
    let now = {};
    while (Date.now() < giveUp) {
      if (child.exitCode !== null) throw new Error(`haproxy exited:\n${stderr}`);
      now = await states().catch(() => ({}));
      if (now[server] === state) return;
      await sleep(50);
    }
    throw new Error(`HAProxy did not see ${server} ${state} (it sees ${JSON.stringify(now)})`);
  };
  const proxy = {
    port,
    url: `http://127.0.0.1:${port}`,
    states,
    seen,
    stderr: () => stderr,
    async settled() {
      for (;;) {
        const total = (await backend()).find((row) => row.svname === 'BACKEND');
        if (total?.qcur === '0' && total.scur === '0') return;
        await sleep(100);
      }
    },
    async stop() {
      child.kill('SIGKILL');
      await exited;
    },
  };
  try {
    await seen('a', 'UP');
    await seen('b', 'UP');
  } catch (error) {
    await proxy.stop();
    throw error;
  }
  return proxy;
}
