/**
 * `npm run bench:connections`: what a connection whose client pipelines and never reads costs
 * the server. The built service (as `npm run start:prod` runs it, on a fresh SQLite file) gets
 * BENCH_CONNECTIONS (default 400) connections, each sending creates with 90 KB names back to back
 * until the server stops reading it, and never reading an answer. Prints the server's resident
 * memory before, once it has stopped growing, and after the clients have gone; and the growth
 * per connection.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const ROOT = join(__dirname, '..');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 400);
const NAME = 'n'.repeat(90 * 1024);

const rssMb = (pid: number): number =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/** Samples every 500 ms until three in a row are within 1 MB of each other; the highest seen. */
async function settled(pid: number): Promise<number> {
  const seen = [rssMb(pid)];
  for (;;) {
    await sleep(500);
    seen.push(rssMb(pid));
    const last = seen.slice(-3);
    if (last.length === 3 && Math.max(...last) - Math.min(...last) < 1) return Math.max(...seen);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-bench-'));
  const env = { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'store.sqlite')}`, LOG_LEVEL: 'warn' };
  const token = execFileSync(process.execPath, ['dist/cli/token.js', 'create', 'memory'], { cwd: ROOT, env })
    .toString()
    .trimEnd()
    .split('\n')
    .at(-1)!;
  const child = spawn(
    process.execPath,
    ['--max-semi-space-size=32', '--min-semi-space-size=32', '--no-allocation-site-pretenuring', 'dist/main.js'],
    {
      cwd: ROOT,
      env: { ...env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    while (!/"port":(\d+),"msg":"Plant Store listening/.test(output)) await once(child.stdout, 'data');
    const port = Number(/"port":(\d+),"msg":"Plant Store listening/.exec(output)![1]);
    const pid = child.pid!;
    await sleep(1_000);
    const before = rssMb(pid);
    let id = 0;
    const sockets: Socket[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.pause(); // never reads
      const send = (): void => {
        for (;;) {
          const body = `{"id":${++id},"name":"${NAME}"}`;
          const request =
            `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
          if (!socket.write(request)) return void socket.once('drain', send);
        }
      };
      socket.once('connect', send);
      sockets.push(socket);
    }
    const peak = await settled(pid);
    for (const socket of sockets) socket.destroy();
    await sleep(3_000);
    const after = await settled(pid);
    const mb = (value: number): string => `${value.toFixed(0)} MB`;
    console.log(`connections: ${CONNECTIONS}, each pipelining creates with 90 KB names and never reading`);
    console.log(`server RSS before: ${mb(before)}, held: ${mb(peak)}, after they closed: ${mb(after)}`);
    console.log(`per connection: ${((peak - before) / CONNECTIONS).toFixed(2)} MB`);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
