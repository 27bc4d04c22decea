/**
 * `npm run bench`: durable creates per second of the built service against two references,
 * interleaved in one run (this machine is noisy: compare ratios within a run, not absolute
 * numbers across runs).
 *
 *   service   node dist/main.js (production mode, WORKERS as given), fresh SQLite store, fresh token
 *   ceiling   bench/references/express-echo.ts: bare Express 5, JSON echo, stores nothing
 *   baseline  bench/references/node-sqlite.ts: node:http + better-sqlite3, our whole job,
 *             one transaction per request
 *
 * Every target gets POST /plants with unique ids from autocannon (32 connections). Settings:
 * BENCH_DURATION (s, default 10), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 32),
 * WORKERS (service processes, default 1), BENCH_TARGETS (comma list, default all three),
 * BENCH_SERVICE_NODE_ARGS (extra `node` flags for the service, to try V8 settings).
 * Figures are printed as a table and written to bench/results/latest.json.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

const ROOT = join(__dirname, '..');
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const WORKERS = process.env.WORKERS ?? '1';
const TS_NODE = ['-r', 'ts-node/register/transpile-only'];

type TargetName = 'service' | 'ceiling' | 'baseline';
const TARGETS = (process.env.BENCH_TARGETS ?? 'service,ceiling,baseline').split(',') as TargetName[];

interface Figures {
  createsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  peakRssMb: number;
  /** RSS (MB) every 5 s of the measured run: flat means no leak. */
  rssMbEvery5s: number[];
}

function commandFor(target: TargetName): string[] {
  switch (target) {
    case 'service':
      return [...(process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean), join(ROOT, 'dist/main.js')];
    case 'ceiling':
      return [...TS_NODE, join(ROOT, 'bench/references/express-echo.ts')];
    case 'baseline':
      return [...TS_NODE, join(ROOT, 'bench/references/node-sqlite.ts')];
  }
}

/** Resident memory of a process and its children (cluster workers), in bytes. */
function rssOfTree(pid: number): number {
  let total = 0;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    for (const child of children ? children.split(/\s+/) : []) total += rssOfTree(Number(child));
  } catch {
    // the process is gone
  }
  return total;
}

function start(target: TargetName, env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, commandFor(target), {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`${target} did not start`)), 30_000);
    child.on('exit', (code) => reject(new Error(`${target} exited with ${code}`)));
    child.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /"port":(\d+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        // Keep draining stdout (the service logs a line per request) without keeping it.
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        resolve({ child, port: Number(match[1]) });
      }
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

let nextId = BigInt(Date.now()) * 1000n;

async function drive(port: number, token: string, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: '/plants',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        setupRequest: (request) => {
          const id = (nextId++).toString();
          return { ...request, body: `{"id":${id},"name":"Plant ${id}","tag":"bench"}` };
        },
      },
    ],
  });
}

async function measure(target: TargetName): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), `plant-store-bench-${target}-`));
  const databaseUrl = `sqlite:${join(dir, 'store.sqlite')}`;
  let token = 'unused';
  if (target !== 'ceiling') {
    const out = execFileSync(process.execPath, [join(ROOT, 'dist/cli/token.js'), 'create', 'bench'], {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      encoding: 'utf8',
    });
    token = out.trimEnd().split('\n').at(-1)!;
  }
  const { child, port } = await start(target, { DATABASE_URL: databaseUrl, WORKERS });
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOfTree(child.pid!))), 100);
  const timeline: number[] = [];
  let timelineSampler: NodeJS.Timeout | undefined;
  try {
    await drive(port, token, 2); // warm-up: JIT, caches, connections
    timelineSampler = setInterval(() => timeline.push(Math.round(rssOfTree(child.pid!) / 1024 / 1024)), 5000);
    const result = await drive(port, token, DURATION);
    return {
      createsPerSecond: result['2xx'] / DURATION,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.timeouts + result.non2xx,
      peakRssMb: Math.round(peak / 1024 / 1024),
      rssMbEvery5s: timeline,
    };
  } finally {
    clearInterval(sampler);
    clearInterval(timelineSampler);
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main(): Promise<void> {
  process.stdout.write('building the service (npm run build)...\n');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const rounds: Record<TargetName, Figures[]> = { service: [], ceiling: [], baseline: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of TARGETS) {
      const figures = await measure(target);
      rounds[target].push(figures);
      process.stdout.write(
        `round ${round} ${target.padEnd(8)} ${figures.createsPerSecond.toFixed(0).padStart(6)} creates/s  ` +
          `p50 ${figures.p50} ms  p99 ${figures.p99} ms  errors ${figures.errors}  peak RSS ${figures.peakRssMb} MB  ` +
          `RSS every 5 s: ${figures.rssMbEvery5s.join(' ')}\n`,
      );
    }
  }
  const summary = Object.fromEntries(
    TARGETS.map((target) => {
      const list = rounds[target];
      return [
        target,
        {
          createsPerSecond: Math.round(median(list.map((f) => f.createsPerSecond))),
          p50: median(list.map((f) => f.p50)),
          p99: median(list.map((f) => f.p99)),
          errors: list.reduce((sum, f) => sum + f.errors, 0),
          peakRssMb: Math.max(...list.map((f) => f.peakRssMb)),
          rssMbEvery5s: list[list.length - 1].rssMbEvery5s,
        },
      ];
    }),
  ) as Partial<Record<TargetName, Figures>>;
  const ratio = (a?: Figures, b?: Figures): number | null =>
    a && b ? Number((a.createsPerSecond / b.createsPerSecond).toFixed(2)) : null;
  const ratios = {
    serviceToBaseline: ratio(summary.service, summary.baseline),
    serviceToCeiling: ratio(summary.service, summary.ceiling),
  };

  const lines = [
    `| target | creates/s | p50 ms | p99 ms | errors | peak RSS MB |`,
    `|---|---|---|---|---|---|`,
    ...TARGETS.map((target) => {
      const f = summary[target]!;
      const label = target === 'service' ? `service (WORKERS=${WORKERS})` : target;
      return `| ${label} | ${f.createsPerSecond} | ${f.p50} | ${f.p99} | ${f.errors} | ${f.peakRssMb} |`;
    }),
  ];
  process.stdout.write(
    `\nmedians of ${ROUNDS} rounds, ${DURATION} s each, ${CONNECTIONS} connections, every 200 fsynced:\n${lines.join('\n')}\n` +
      `service / baseline: ${ratios.serviceToBaseline}   service / ceiling: ${ratios.serviceToCeiling}\n`,
  );
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/results/latest.json'),
    `${JSON.stringify({ date: new Date().toISOString(), duration: DURATION, rounds: ROUNDS, connections: CONNECTIONS, workers: WORKERS, summary, ratios, perRound: rounds }, null, 2)}\n`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
