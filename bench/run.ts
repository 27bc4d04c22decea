/**
 * `npm run bench`: durable creates per second of the built service, on SQLite and on PostgreSQL,
 * against references without the framework or with less of it, interleaved in one run (this
 * machine is noisy: compare ratios within a run, never absolute numbers across runs).
 *
 *   sqlite        the service, as `npm run start:prod` runs it, on a fresh SQLite file, fresh
 *                 token
 *   sqlite-metrics  the same with METRICS_PORT set: what counting every answer costs
 *   sqlite-tracing  the same with OTEL_EXPORTER_OTLP_ENDPOINT set, sending its spans to a
 *                 receiver in this process that reads and drops them
 *   postgres      the same on a fresh PostgreSQL database (skipped when none answers)
 *   postgres-pgbouncer  the same through PgBouncer in transaction mode (skipped when Debian's
 *                 pgbouncer is not installed)
 *   sqlite-random  the service as `sqlite`, the ids uniform over [0, 2^53) (wrk only), as clients
 *                 that pick their own ids send them
 *   grown-sqlite  the same on a store that already holds BENCH_GROWN_PLANTS plants (40,000,000;
 *                 random ids over the same range), filled once with the sqlite3 CLI and kept in
 *                 bench/.grown/ (about 1.9 GB at 40 M), read whole before each run (warm), served in
 *                 place; not in the default run
 *   grown-sqlite-seq  the same with the ids in sequence, as `sqlite` sends them
 *   grown-node-sqlite-group  node-sqlite-group (below) on the same grown store, random ids: the
 *                 ceiling of this stack at that size
 *   postgres-random  the service as `postgres`, random ids as `sqlite-random`
 *   grown-postgres  the service on a PostgreSQL database that already holds BENCH_GROWN_PLANTS
 *                 plants (random ids), filled once with generate_series and kept between runs
 *                 (plant_store_grown_N), read whole (pg_prewarm) before each run; random ids
 *   grown-postgres-seq  the same with the ids in sequence
 *   storm-1000    the service as `sqlite`, exposed directly, with 1,000 connections that wrk
 *                 opens at once at the start of each run: what a fleet's clients do when they all
 *                 reconnect; the kernel's listen overflows during the measured run are counted
 *                 (/proc/net/netstat: system-wide, so keep the machine quiet)
 *   storm-3000    3,000 connections at once through the recipe's HAProxy
 *                 (deploy/haproxy/plant-store.cfg, Debian's haproxy) to two instances on one
 *                 SQLite file, as docs/operations.md runs them
 *   express-echo  bench/references/express-echo.ts: bare Express 5, JSON echo, stores nothing
 *   node-sqlite   bench/references/node-sqlite.ts: node:http + better-sqlite3, the whole job,
 *                 one transaction (one fsync) per request
 *   node-sqlite-group  bench/references/node-sqlite-group.ts: the same with the service's group
 *                 commit (one transaction per event-loop turn): the same durability with no
 *                 framework, the limit of this stack
 *   node-pg       bench/references/node-pg.ts: node:http + pg (pool 10), one autocommit INSERT
 *                 per request
 *   nest-sqlite   bench/references/nest-sqlite.ts: the service's own pieces at their plainest
 *                 (Nest on Express, passport bearer guard, class-validator DTO, a pino line per
 *                 request) around the same group commit on better-sqlite3, and nothing else: the
 *                 most the service could do with these pieces
 *   nest-bare     the same with none of those pieces (NEST_SQLITE_PIECES=none): Nest on Express,
 *                 Nest's JSON parser and the group commit, no guard, no pipe, no log line: what
 *                 the framework alone allows on this machine
 *   nest-log      the same with only the pino line per request (NEST_SQLITE_PIECES=log)
 *   sqlite-baseline, postgres-baseline  the service as `sqlite` and `postgres`, from another
 *                 build: BENCH_BASELINE names a checkout of the commit to compare with, after its
 *                 `npm ci && npm run build`; what a change costs, interleaved with it in one run.
 *                 Not in the default run
 *
 * Load: `wrk` (Debian's package) when it is on the machine, else autocannon, which runs in Node
 * on the same cores as the server and so understates everything; the run says which. Every
 * target gets POST /plants with unique ids, 1 thread, 32 connections (the storms their own).
 * Settings: BENCH_DURATION (s, default 8), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32),
 * BENCH_TARGETS (comma list, default all but the grown ones), BENCH_GROWN_PLANTS (40000000), BENCH_LOAD (wrk or autocannon, to force one),
 * BENCH_POSTGRES_URL (a server to make databases on; default postgres://postgres@127.0.0.1:5432/postgres),
 * BENCH_SERVICE_NODE_ARGS (the service's `node` flags; default those of `npm run start:prod`),
 * BENCH_BASELINE (the checkout the -baseline targets run).
 * Beside creates/s and latency, each run reports the bytes written per create to the disk that
 * holds the store (/proc/diskstats: the whole disk's, so keep the machine quiet; the service's own
 * log lines land there too, about 0.3 KB a create, when the kernel writes them back), the
 * SQLite log's (-wal) largest size, sampled every 100 ms, the target's CPU time per create
 * (/proc/PID/stat), and on PostgreSQL what the server spent per create (bench/postgres-cost.ts):
 * the CPU time of the backends serving the target's database and of all the server's processes,
 * and the WAL bytes (the last two are the whole server's: keep it quiet).
 * Figures are printed as a table and written to bench/results/latest.json.
 *
 * BENCH_MODE=fixed-rate: latency at a planned load rather than at saturation. BENCH_TARGETS then
 * names pairs, `service:peer`, or `service` alone for its usual peer (postgres:node-pg,
 * sqlite:nest-sqlite; default `postgres,sqlite`). Each pair's targets run first at saturation
 * (wrk, one run each; BENCH_PEER_RATES=node-pg:6000,nest-sqlite:9000 gives the peers' rates
 * instead, and skips it), then at BENCH_RATES per cent of the peer's saturated rate (default
 * 25,50,75), service and peer alternating at each rate (the service first in odd rounds),
 * BENCH_ROUNDS rounds, each run on a fresh store after 2 s at the same rate. The load is
 * bench/paced-load.ts (an open load: request i due at i / rate, whatever the answers take; not
 * autocannon's overallRate, which sends each second's requests in a burst at its start) on
 * BENCH_CONNECTIONS keep-alive connections, in Node on the same cores as the server. Reported:
 * the rate asked, sent and achieved (200s a second), p50, p99 and p99.9 of the 200s, every other
 * answer by status and `error`, connection errors and timeouts, how late the load sent (its own
 * lateness), the CPU and PostgreSQL figures above, peak RSS; medians of the rounds, and the ratio
 * of the service's p99 to the peer's at each rate. Written to bench/results/fixed-rate.json.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { listenOverflows } from '../scripts/listen-overflows.mjs';
import { freePort } from '../scripts/free-port.mjs';
import { type Proxy, startProxy } from '../scripts/haproxy.mjs';
import { type PgBouncer, pgbouncerPath, startPgBouncer } from '../scripts/pgbouncer.mjs';
import { type PacedResult, type PacedSettings } from './paced-load';
import { PostgresMeter, processCpuMs } from './postgres-cost';
import { databaseName, grownPostgres, grownSqlite, onPostgres, POSTGRES_ADMIN, postgresUrl, ROOT } from './stores';

const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const MODE = process.env.BENCH_MODE ?? 'saturate';
const RATES = (process.env.BENCH_RATES ?? '25,50,75').split(',').map(Number);
const TS_NODE = ['-r', 'ts-node/register/transpile-only'];

/** The service itself, as production runs it, in its variants. */
const SERVICE_TARGETS = [
  'sqlite',
  'sqlite-metrics',
  'sqlite-tracing',
  'postgres',
  'postgres-pgbouncer',
  'storm-1000',
  'storm-3000',
  'sqlite-random',
  'grown-sqlite',
  'grown-sqlite-seq',
  'postgres-random',
  'grown-postgres',
  'grown-postgres-seq',
  'sqlite-baseline',
  'postgres-baseline',
] as const;
const ALL_TARGETS = [
  ...SERVICE_TARGETS,
  'express-echo',
  'node-sqlite',
  'node-sqlite-group',
  'node-pg',
  'nest-sqlite',
  'nest-bare',
  'nest-log',
  'grown-node-sqlite-group',
] as const;
type TargetName = (typeof ALL_TARGETS)[number];
/**
 * What a run measures unless BENCH_TARGETS says: all but the grown store's, which fill it first,
 * and the baseline's, which need another build.
 */
const DEFAULT_TARGETS = ALL_TARGETS.filter((target) => !target.startsWith('grown-') && !isBaseline(target));
type Store = 'sqlite' | 'postgres' | 'none';

const STORE: Record<TargetName, Store> = {
  sqlite: 'sqlite',
  'sqlite-metrics': 'sqlite',
  'sqlite-tracing': 'sqlite',
  postgres: 'postgres',
  'postgres-pgbouncer': 'postgres',
  'storm-1000': 'sqlite',
  'storm-3000': 'sqlite',
  'sqlite-random': 'sqlite',
  'grown-sqlite': 'sqlite',
  'grown-sqlite-seq': 'sqlite',
  'postgres-random': 'postgres',
  'grown-postgres': 'postgres',
  'grown-postgres-seq': 'postgres',
  'sqlite-baseline': 'sqlite',
  'postgres-baseline': 'postgres',
  'grown-node-sqlite-group': 'sqlite',
  'express-echo': 'none',
  'node-sqlite': 'sqlite',
  'node-sqlite-group': 'sqlite',
  'node-pg': 'postgres',
  'nest-sqlite': 'sqlite',
  'nest-bare': 'sqlite',
  'nest-log': 'sqlite',
};

interface Figures {
  createsPerSecond: number;
  p50: number;
  p99: number;
  p999: number;
  errors: number;
  /** The kernel's ListenOverflows during the measured run: SYNs dropped for a full accept queue. */
  listenOverflows: number;
  peakRssMb: number;
  /** Requests answered but missing from the service's log (it keeps up, or it is not doing its job). */
  lostLogLines: number;
  /** Bytes written to the store's disk per create during the measured run, in KB (0: not measured). */
  writtenKbPerCreate: number;
  /** The SQLite log's (-wal) largest size during the run, in MB (0 on PostgreSQL). */
  peakWalMb: number;
  /** CPU time of the target's processes (utime + stime, /proc) per create, in µs. */
  targetCpuUsPerCreate: number;
  /**
   * On PostgreSQL (null elsewhere, or where the server's processes cannot be read): CPU time of
   * the backends serving the target's database and of every process of the server, per create,
   * in µs, and the WAL written per create, in bytes (bench/postgres-cost.ts).
   */
  pgBackendCpuUsPerCreate: number | null;
  pgServerCpuUsPerCreate: number | null;
  walBytesPerCreate: number | null;
  /** A fixed-rate run's own figures: the rates asked and achieved, every answer other than 200, the load's lateness. */
  paced?: PacedResult;
}

/** What every answered request leaves in the service's log (see logRequest). */
const REQUEST_LINE = '"msg":"request completed"';

interface Started {
  child: ChildProcess;
  port: number;
}

function hasWrk(): boolean {
  return spawnSync('wrk', ['--version']).error === undefined;
}
const LOAD: 'wrk' | 'autocannon' =
  process.env.BENCH_LOAD === 'autocannon' || (process.env.BENCH_LOAD !== 'wrk' && !hasWrk()) ? 'autocannon' : 'wrk';

function isService(target: TargetName): boolean {
  return (SERVICE_TARGETS as readonly string[]).includes(target);
}

/** The storms' connection counts are in their names; every other target gets BENCH_CONNECTIONS. */
function connectionsFor(target: TargetName): number {
  const storm = /^storm-(\d+)$/.exec(target);
  return storm === null ? CONNECTIONS : Number(storm[1]);
}

/**
 * The service runs as production runs it: with the `node` flags of `npm run start:prod` (its
 * memory settings), unless BENCH_SERVICE_NODE_ARGS gives others ("" for none).
 */
function serviceNodeArgs(): string[] {
  const given = process.env.BENCH_SERVICE_NODE_ARGS;
  if (given !== undefined) return given.split(' ').filter(Boolean);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = pkg.scripts['start:prod'].split('&&').at(-1)!.trim().split(/\s+/);
  return words.slice(1, words.indexOf('dist/main.js'));
}
const SERVICE_NODE_ARGS = serviceNodeArgs();

/** The -baseline targets: the service from another built checkout, BENCH_BASELINE. */
function isBaseline(target: TargetName): boolean {
  return target.endsWith('-baseline');
}

/** The entry point of the checkout the -baseline targets run. */
const BASELINE_MAIN =
  process.env.BENCH_BASELINE === undefined ? undefined : join(resolve(process.env.BENCH_BASELINE), 'dist/main.js');

function commandFor(target: TargetName): string[] {
  if (isBaseline(target)) return [...SERVICE_NODE_ARGS, BASELINE_MAIN!];
  if (isService(target)) return [...SERVICE_NODE_ARGS, join(ROOT, 'dist/main.js')];
  switch (target) {
    case 'express-echo':
      return [...TS_NODE, join(ROOT, 'bench/references/express-echo.ts')];
    case 'node-sqlite':
      return [...TS_NODE, join(ROOT, 'bench/references/node-sqlite.ts')];
    case 'node-sqlite-group':
    case 'grown-node-sqlite-group':
      return [...TS_NODE, join(ROOT, 'bench/references/node-sqlite-group.ts')];
    case 'node-pg':
      return [...TS_NODE, join(ROOT, 'bench/references/node-pg.ts')];
    case 'nest-sqlite':
    case 'nest-bare':
    case 'nest-log':
      return [...TS_NODE, join(ROOT, 'bench/references/nest-sqlite.ts')];
    default:
      throw new Error(`no command for ${target}`);
  }
}

/** Resident memory of a process and its children (cluster workers), in bytes. */
function rssOfTree(pid: number): number {
  let total = 0;
  for (const each of processTree(pid)) {
    try {
      total += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${each}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      // the process is gone
    }
  }
  return total;
}

/** The pids of a process and its children (cluster workers). */
function processTree(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return [pid, ...(children ? children.split(/\s+/) : []).flatMap((child) => processTree(Number(child)))];
  } catch {
    return []; // the process is gone
  }
}

/** How many request lines a log file holds, read in pieces (a storm's log is large). */
function requestLinesIn(file: string): number {
  const fd = openSync(file, 'r');
  const chunk = Buffer.alloc(1 << 20);
  let count = 0;
  let tail = '';
  try {
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      const text = tail + chunk.toString('latin1', 0, read);
      for (let at = text.indexOf(REQUEST_LINE); at !== -1; at = text.indexOf(REQUEST_LINE, at + 1)) count++;
      tail = text.slice(1 - REQUEST_LINE.length);
    }
  } finally {
    closeSync(fd);
  }
  return count;
}

/**
 * Starts a target with its stdout in `logFile`: a file, not a pipe, because a pipe is only as
 * fast as this process reads it, and under a storm this process shares the cores with the server
 * and wrk: the service would drop lines it could not write (as it does when stdout is not read),
 * which is the bench's limit, not the service's.
 */
async function start(target: TargetName, env: Record<string, string>, logFile: string): Promise<Started> {
  const out = openSync(logFile, 'w');
  const child = spawn(process.execPath, commandFor(target), {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', out, 'inherit'],
  });
  closeSync(out);
  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code));
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    if (exited !== undefined) throw new Error(`${target} exited with ${exited}`);
    // The public port: the service's "listening" line, or a reference's {"port":N} (the
    // service says its metrics port first, when it has one).
    const match = /"port":(\d+)(?:,"msg":"Plant Store listening|\})/.exec(readFileSync(logFile, 'latin1'));
    if (match) {
      child.removeAllListeners('exit');
      return { child, port: Number(match[1]) };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`${target} did not start`);
}

async function stop(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Ids are unique across every run of this process: each run starts a billion past the last. */
let nextBase = Date.now() * 1000;
function idBase(): number {
  nextBase += 1e9;
  return nextBase;
}

/**
 * The grown targets' store: a SQLite file filled once with BENCH_GROWN_PLANTS plants (ids random
 * over [0, 2^53), as the random targets send; bench/stores.ts), kept in bench/.grown/ between runs
 * and served in place: each run adds its creates to it (an 8 s run a small share of the fill, a 10-minute run
 * about a seventh).
 */
const GROWN_PLANTS = Number(process.env.BENCH_GROWN_PLANTS ?? 40_000_000);

/** Targets whose ids are uniform over [0, 2^53), as clients that pick their own ids send them. */
const RANDOM_IDS: readonly TargetName[] = [
  'sqlite-random',
  'grown-sqlite',
  'grown-node-sqlite-group',
  'postgres-random',
  'grown-postgres',
];

/**
 * The grown PostgreSQL targets' database (bench/stores.ts fills it once), read whole (pg_prewarm
 * into the kernel's cache) before each run, as `warm` does for SQLite; its URL.
 */
async function grownPostgresWarm(): Promise<string> {
  const url = await grownPostgres(GROWN_PLANTS);
  const name = databaseName(url);
  try {
    await onPostgres(url, async (client) => {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_prewarm');
      await client.query(
        `SELECT pg_prewarm(c.oid, 'read') FROM pg_class c
           WHERE c.oid = 'plant'::regclass OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'plant'::regclass)`,
      );
    });
  } catch (error) {
    // pg_prewarm needs a superuser and the server's contrib modules.
    process.stdout.write(
      `warning: ${name} was not read whole first (${(error as Error).message}): the run may read it from disk\n`,
    );
  }
  return url;
}

/**
 * Reads `file` whole, so that its pages are in the kernel's cache, as a store's are once it has
 * served a while on a machine with the memory for it; read from the disk instead (after a fill or
 * a restore, or on a machine with less memory than the store), random ids into 40 M plants ran at
 * about half the rate.
 */
function warm(file: string): string {
  const fd = openSync(file, 'r');
  const chunk = Buffer.alloc(1 << 24);
  try {
    while (readSync(fd, chunk) > 0);
  } finally {
    closeSync(fd);
  }
  return file;
}

const WRK_SCRIPT = `
local counter = 0
local base = tonumber(os.getenv("BENCH_ID_BASE"))
RANDOM_ID = os.getenv("BENCH_RANDOM_IDS") == "1"
math.randomseed(base % 2147483647)
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
wrk.headers["Content-Type"] = "application/json"
request = function()
  counter = counter + 1
  local id = RANDOM_ID and string.format("%.0f", math.floor(math.random() * 9007199254740992)) or string.format("%.0f", base + counter)
  return wrk.format(nil, "/plants", nil, '{"id":' .. id .. ',"name":"Plant ' .. id .. '","tag":"bench"}')
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\nBENCH_JSON {"requests":%d,"durationUs":%d,"errors":%d,"p50Us":%d,"p99Us":%d,"p999Us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
`;

interface Load {
  ok: number;
  seconds: number;
  errors: number;
  p50: number;
  p99: number;
  p999: number;
}

/** wrk runs as a child process, so this process keeps sampling the server's memory meanwhile. */
function driveWrk(
  port: number,
  token: string,
  seconds: number,
  script: string,
  connections: number,
  randomIds: boolean,
): Promise<Load> {
  const child = spawn(
    'wrk',
    // A request slower than wrk's default timeout (2 s) would be counted as an error and left
    // out of the latencies: the storms' tails are what is measured, so wrk waits for 10 s.
    [
      '-t1',
      `-c${connections}`,
      `-d${seconds}s`,
      '--timeout',
      '10s',
      '--latency',
      '-s',
      script,
      `http://127.0.0.1:${port}/plants`,
    ],
    {
      env: {
        ...process.env,
        BENCH_TOKEN: token,
        BENCH_ID_BASE: String(idBase()),
        BENCH_RANDOM_IDS: randomIds ? '1' : '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', () => {
      const line = /BENCH_JSON (\{.*\})/.exec(stdout)?.[1];
      if (line === undefined) {
        reject(new Error(`wrk said:\n${stdout}\n${stderr}`));
        return;
      }
      const figures = JSON.parse(line) as {
        requests: number;
        durationUs: number;
        errors: number;
        p50Us: number;
        p99Us: number;
        p999Us: number;
      };
      resolve({
        ok: figures.requests - figures.errors,
        seconds: figures.durationUs / 1e6,
        errors: figures.errors,
        p50: Math.round(figures.p50Us / 100) / 10,
        p99: Math.round(figures.p99Us / 100) / 10,
        p999: Math.round(figures.p999Us / 100) / 10,
      });
    });
  });
}

async function driveAutocannon(port: number, token: string, seconds: number, connections: number): Promise<Load> {
  let next = idBase();
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: '/plants',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        setupRequest: (request) => {
          const id = String(next++);
          return { ...request, body: `{"id":${id},"name":"Plant ${id}","tag":"bench"}` };
        },
      },
    ],
  });
  return {
    ok: result['2xx'],
    seconds,
    errors: result.errors + result.timeouts + result.non2xx,
    p50: result.latency.p50,
    p99: result.latency.p99,
    p999: result.latency.p99_9,
  };
}

/**
 * The fixed-rate load (bench/paced-load.ts) in a child process of its own: its warm-up at the
 * same rate, then `begin` (the counters read before the measured run), then the measured run.
 */
async function drivePaced(
  port: number,
  token: string,
  rate: number,
  connections: number,
  begin: () => Promise<void>,
): Promise<{ warmUp: Load; load: Load; paced: PacedResult }> {
  const settings: PacedSettings = {
    port,
    token,
    rate,
    warmUpSeconds: 2,
    seconds: DURATION,
    connections,
    idBase: idBase(),
  };
  const child = spawn(process.execPath, [...TS_NODE, join(ROOT, 'bench/paced-load.ts')], {
    cwd: ROOT,
    env: { ...process.env, BENCH_PACED: JSON.stringify(settings) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const asLoad = (result: PacedResult, seconds: number): Load => ({
    ok: result.ok,
    seconds,
    errors: result.sent - result.ok,
    p50: result.p50,
    p99: result.p99,
    p999: result.p999,
  });
  try {
    let output = '';
    let warmUp: PacedResult | undefined;
    const result = await new Promise<PacedResult>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => reject(new Error(`the paced load exited with ${code} before its result`)));
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const ready = /^ready (\{.*\})$/m.exec(output);
        if (ready !== null && warmUp === undefined) {
          warmUp = JSON.parse(ready[1]) as PacedResult;
          begin().then(() => child.stdin.write('go\n'), reject);
        }
        const done = /^result (\{.*\})$/m.exec(output);
        if (done !== null) resolve(JSON.parse(done[1]) as PacedResult);
      });
    });
    return { warmUp: asLoad(warmUp!, settings.warmUpSeconds), load: asLoad(result, DURATION), paced: result };
  } finally {
    child.removeAllListeners('exit');
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** A fresh store for one measurement, with a token; dropped afterwards. */
async function freshStore(
  store: Store,
  dir: string,
  pooler?: PgBouncer,
  grown = false,
): Promise<{ url: string; token: string; drop(): Promise<void> }> {
  if (store === 'none') return { url: '', token: 'unused', drop: () => Promise.resolve() };
  let url: string;
  let drop = (): Promise<void> => Promise.resolve();
  if (store === 'sqlite') {
    url = `sqlite:${grown ? warm(grownSqlite(GROWN_PLANTS)) : join(dir, 'store.sqlite')}`;
  } else if (grown) {
    url = await grownPostgresWarm();
  } else {
    const name = `plant_store_bench_${randomBytes(4).toString('hex')}`;
    await onPostgres(POSTGRES_ADMIN, (admin) => admin.query(`CREATE DATABASE "${name}"`));
    url = pooler?.url(name) ?? postgresUrl(name);
    drop = async () => {
      await onPostgres(POSTGRES_ADMIN, (admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    };
  }
  const out = execFileSync(
    process.execPath,
    [join(ROOT, 'dist/cli/token.js'), 'create', `bench-${randomBytes(4).toString('hex')}`],
    {
      env: { ...process.env, DATABASE_URL: url },
      encoding: 'utf8',
    },
  );
  return { url, token: out.trimEnd().split('\n').at(-1)!, drop };
}

/** An OTLP/HTTP receiver that reads every span batch and drops it; its URL. Started once. */
let receiver: Promise<string> | undefined;
function spanReceiver(): Promise<string> {
  receiver ??= new Promise((resolve) => {
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}'));
    });
    server.listen(0, '127.0.0.1', () => {
      server.unref();
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
  return receiver;
}

/**
 * Bytes written to the disk that holds `path` so far (/proc/diskstats), or undefined where that
 * is not a disk of this machine. The whole disk's, not one process's: `/proc/PID/io` counts a
 * whole large page-cache folio for every page written into it, ten times the disk's figure on a
 * store read whole before its run.
 */
function diskWrites(path: string): (() => number) | undefined {
  const dev = statSync(path, { throwIfNoEntry: false })?.dev;
  if (dev === undefined) return undefined;
  const major = ((dev >> 8) & 0xfff) | (Math.floor(dev / 2 ** 32) & ~0xfff);
  const minor = (dev & 0xff) | ((dev >> 12) & ~0xff);
  const sectors = (): number | undefined => {
    for (const line of readFileSync('/proc/diskstats', 'utf8').split('\n')) {
      const fields = line.trim().split(/\s+/);
      if (Number(fields[0]) === major && Number(fields[1]) === minor) return Number(fields[9]) * 512;
    }
    return undefined;
  };
  return sectors() === undefined ? undefined : () => sectors()!;
}

/** Where the store's files are on this machine: the SQLite file, or PostgreSQL's data directory. */
async function storePath(store: Store, url: string): Promise<string | undefined> {
  if (store === 'sqlite') return url.replace(/^sqlite:/, '');
  if (store === 'none') return undefined;
  try {
    return await onPostgres(POSTGRES_ADMIN, async (admin) => {
      const { rows } = await admin.query<{ data_directory: string }>('SHOW data_directory');
      return rows[0]?.data_directory;
    });
  } catch {
    return undefined; // not allowed to see it
  }
}

/** Targets served through the recipe's HAProxy, by two instances. */
const PROXIED: readonly TargetName[] = ['storm-3000'];

/** Two instances of `target` behind deploy/haproxy/plant-store.cfg, once HAProxy has both up. */
async function startProxied(target: TargetName, env: Record<string, string>, dir: string): Promise<Proxied> {
  const ports = [await freePort(), await freePort()];
  const instances = await Promise.all(
    ports.map((port, i) =>
      start(target, { ...env, PORT: String(port), TRUST_PROXY: 'loopback' }, join(dir, `stdout-${i}.log`)),
    ),
  );
  try {
    return { instances, proxy: await startProxy(ports[0], ports[1]) };
  } catch (error) {
    await Promise.all(instances.map(({ child }) => stop(child)));
    throw error;
  }
}

interface Proxied {
  instances: Started[];
  proxy: Proxy;
}

/** CPU time of the target's processes so far, in ms. */
function cpuMsOf(instances: Started[]): number {
  return instances.reduce(
    (sum, { child }) => sum + processTree(child.pid!).reduce((each, pid) => each + processCpuMs(pid), 0),
    0,
  );
}

/**
 * One measurement of a target on a fresh store: at saturation (wrk, or autocannon), or, given
 * `rate`, at that fixed rate (bench/paced-load.ts).
 */
async function measure(target: TargetName, script: string, rate?: number): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), `plant-store-bench-${target}-`));
  let pooler: PgBouncer | undefined;
  let store: Awaited<ReturnType<typeof freshStore>> | undefined;
  let proxied: Proxied | undefined;
  let instances: Started[] = [];
  let meter: PostgresMeter | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    // postgres-pgbouncer: the service reaches a fresh database through PgBouncer in transaction mode.
    pooler =
      target === 'postgres-pgbouncer'
        ? await startPgBouncer({ upstream: POSTGRES_ADMIN, mode: 'transaction' })
        : undefined;
    store = await freshStore(STORE[target], dir, pooler, target.startsWith('grown-'));
    const env = {
      DATABASE_URL: store.url,
      ...(target === 'sqlite-metrics' ? { METRICS_PORT: '0' } : {}),
      ...(target === 'sqlite-tracing' ? { OTEL_EXPORTER_OTLP_ENDPOINT: await spanReceiver() } : {}),
      ...(target === 'nest-bare' ? { NEST_SQLITE_PIECES: 'none' } : {}),
      ...(target === 'nest-log' ? { NEST_SQLITE_PIECES: 'log' } : {}),
    };
    proxied = PROXIED.includes(target) ? await startProxied(target, env, dir) : undefined;
    instances = proxied?.instances ?? [await start(target, env, join(dir, 'stdout-0.log'))];
    const running = instances;
    const port = proxied?.proxy.port ?? instances[0].port;
    const logFiles = instances.map((_, i) => join(dir, `stdout-${i}.log`));
    let peak = 0;
    const wal = STORE[target] === 'sqlite' ? `${store.url.replace(/^sqlite:/, '')}-wal` : undefined;
    let peakWal = 0;
    sampler = setInterval(() => {
      peak = Math.max(
        peak,
        running.reduce((sum, { child }) => sum + rssOfTree(child.pid!), 0),
      );
      if (wal !== undefined) peakWal = Math.max(peakWal, statSync(wal, { throwIfNoEntry: false })?.size ?? 0);
    }, 100);
    const storePathNow = await storePath(STORE[target], store.url);
    const storeWrites = storePathNow === undefined ? undefined : diskWrites(storePathNow);
    const connections = connectionsFor(target);
    const { token, url } = store;
    const drive = (seconds: number): Promise<Load> =>
      LOAD === 'wrk'
        ? driveWrk(port, token, seconds, script, connections, RANDOM_IDS.includes(target))
        : driveAutocannon(port, token, seconds, connections);
    // The counters, read just before the measured run.
    let overflowsBefore = 0;
    let writesBefore = 0;
    let cpuBefore = 0;
    const begin = async (): Promise<void> => {
      overflowsBefore = listenOverflows();
      writesBefore = storeWrites?.() ?? 0;
      cpuBefore = cpuMsOf(running);
      if (STORE[target] === 'postgres') meter = await PostgresMeter.start(POSTGRES_ADMIN, databaseName(url));
    };
    let warmUp: Load;
    let load: Load;
    let paced: PacedResult | undefined;
    if (rate === undefined) {
      warmUp = await drive(2); // JIT, caches, connections
      await proxied?.proxy.settled();
      await begin();
      load = await drive(DURATION);
    } else {
      ({ warmUp, load, paced } = await drivePaced(port, token, rate, connections, begin));
    }
    const written = (storeWrites?.() ?? 0) - writesBefore;
    const overflows = listenOverflows() - overflowsBefore;
    const cpu = cpuMsOf(running) - cpuBefore;
    const cost = await meter?.stop();
    meter = undefined;
    clearInterval(sampler);
    // The proxy first: instances stopping under it would fail its checks, which is no news.
    await proxied?.proxy.stop();
    await Promise.all(instances.map(({ child }) => stop(child)));
    const answered = warmUp.ok + warmUp.errors + load.ok + load.errors;
    const creates = Math.max(1, load.ok);
    const perCreate = (ms: number | undefined): number | null =>
      ms === undefined ? null : Number(((ms * 1000) / creates).toFixed(1));
    return {
      createsPerSecond: load.ok / load.seconds,
      p50: load.p50,
      p99: load.p99,
      p999: load.p999,
      errors: load.errors,
      listenOverflows: overflows,
      peakRssMb: Math.round(peak / 1024 / 1024),
      lostLogLines: isService(target)
        ? Math.max(0, answered - logFiles.reduce((sum, file) => sum + requestLinesIn(file), 0))
        : 0,
      writtenKbPerCreate: Number((written / creates / 1024).toFixed(2)),
      peakWalMb: Math.round(peakWal / 1024 / 1024),
      targetCpuUsPerCreate: Number(((cpu * 1000) / creates).toFixed(1)),
      pgBackendCpuUsPerCreate: perCreate(cost?.backendCpuMs),
      pgServerCpuUsPerCreate: perCreate(cost?.serverCpuMs),
      walBytesPerCreate: cost === undefined ? null : Math.round(cost.walBytes / creates),
      ...(paced === undefined ? {} : { paced }),
    };
  } finally {
    clearInterval(sampler);
    await meter?.abandon();
    if (proxied !== undefined) {
      await proxied.proxy.stop();
      process.stderr.write(proxied.proxy.stderr());
    }
    for (const { child } of instances) if (child.exitCode === null && child.signalCode === null) await stop(child);
    await store?.drop();
    await pooler?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/**
 * The peer each service target is held against in fixed-rate mode: the reference doing the same
 * job with less (`node-pg`, `nest-sqlite`), or the build before.
 */
const PEERS: Partial<Record<TargetName, TargetName>> = {
  postgres: 'node-pg',
  'postgres-pgbouncer': 'node-pg',
  'postgres-random': 'node-pg',
  sqlite: 'nest-sqlite',
  'sqlite-metrics': 'sqlite',
  'sqlite-tracing': 'sqlite',
  'sqlite-baseline': 'sqlite',
  'postgres-baseline': 'postgres',
};

/** Fixed-rate mode's pairs: BENCH_TARGETS as `service` (its peer from PEERS) or `service:peer`. */
function fixedRatePairs(): [TargetName, TargetName][] {
  return (process.env.BENCH_TARGETS ?? 'postgres,sqlite').split(',').map((entry) => {
    const [service, named] = entry.split(':') as [TargetName, TargetName | undefined];
    const peer = named ?? PEERS[service];
    for (const target of [service, peer]) {
      if (target === undefined || !(ALL_TARGETS as readonly string[]).includes(target)) {
        throw new Error(`BENCH_TARGETS: ${entry} names no target and peer (service, or service:peer)`);
      }
    }
    if (PROXIED.includes(service) || PROXIED.includes(peer!))
      throw new Error(`BENCH_TARGETS: ${entry}: not at a fixed rate`);
    return [service, peer!];
  });
}

/** BENCH_PEER_RATES (`node-pg:6000,nest-sqlite:9000`): saturated rates given, not measured. */
function givenRates(): Map<string, number> {
  const given = new Map<string, number>();
  for (const entry of (process.env.BENCH_PEER_RATES ?? '').split(',').filter(Boolean)) {
    const [target, rate] = entry.split(':');
    if (!(Number(rate) > 0)) throw new Error(`BENCH_PEER_RATES: ${entry} is not target:creates-per-second`);
    given.set(target, Number(rate));
  }
  return given;
}

const medianOf = (values: (number | null)[]): number | null => {
  const known = values.filter((value): value is number => value !== null);
  return known.length === 0 ? null : Number(median(known).toFixed(1));
};

/** A run's errors as one phrase: every answer other than 200 by status/error, and connection errors and timeouts. */
function errorsOf(figures: Figures[]): string {
  const counts: Record<string, number> = {};
  for (const { paced } of figures) {
    if (paced === undefined) continue;
    for (const [key, count] of Object.entries(paced.failures)) counts[key] = (counts[key] ?? 0) + count;
    if (paced.connectionErrors > 0) counts.connection = (counts.connection ?? 0) + paced.connectionErrors;
    if (paced.timeouts > 0) counts.timeout = (counts.timeout ?? 0) + paced.timeouts;
  }
  const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
  const parts = Object.entries(counts).map(([key, count]) => `${key}: ${count}`);
  return total === 0 ? '0' : `${total} (${parts.join(', ')})`;
}

/** One target at one rate, over the rounds: medians (errors and lost log lines: sums; peak RSS: the largest). */
interface RateSummary {
  requestedRate: number;
  achievedRate: number;
  sentRate: number;
  p50: number;
  p99: number;
  p999: number;
  errors: number;
  errorsByKind: string;
  loadLagP99: number;
  loadCpuUsPerRequest: number;
  targetCpuUsPerCreate: number | null;
  pgBackendCpuUsPerCreate: number | null;
  pgServerCpuUsPerCreate: number | null;
  walBytesPerCreate: number | null;
  peakRssMb: number;
  lostLogLines: number;
}

/**
 * Fixed-rate mode: each pair's peer at saturation (wrk, one run, unless BENCH_PEER_RATES gives
 * its rate), then service and peer at BENCH_RATES per cent of the peer's rate, alternating at
 * each rate (the service first in odd rounds, the peer in even ones), BENCH_ROUNDS rounds.
 */
async function fixedRate(pairs: [TargetName, TargetName][], script: string): Promise<void> {
  const given = givenRates();
  const saturated = new Map<TargetName, number>(
    [...given].filter(([target]) => pairs.some((pair) => pair.includes(target as TargetName))) as [
      TargetName,
      number,
    ][],
  );
  for (const pair of pairs) {
    if (given.has(pair[1])) continue;
    for (const target of pair) {
      if (saturated.has(target)) continue;
      const figures = await measure(target, script);
      saturated.set(target, figures.createsPerSecond);
      process.stdout.write(
        `saturated ${target}: ${figures.createsPerSecond.toFixed(0)} creates/s (${LOAD}, ${connectionsFor(target)} connections, ${DURATION} s)  ` +
          `p99 ${figures.p99} ms  CPU ${figures.targetCpuUsPerCreate} µs/create  peak RSS ${figures.peakRssMb} MB\n`,
      );
    }
  }
  const key = (service: TargetName, percent: number, target: TargetName): string => `${service}|${percent}|${target}`;
  const rounds = new Map<string, Figures[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [service, peer] of pairs) {
      for (const percent of RATES) {
        const rate = Math.round((saturated.get(peer)! * percent) / 100);
        for (const target of round % 2 === 1 ? [service, peer] : [peer, service]) {
          const figures = await measure(target, script, rate);
          const list = rounds.get(key(service, percent, target)) ?? [];
          list.push(figures);
          rounds.set(key(service, percent, target), list);
          const paced = figures.paced!;
          process.stdout.write(
            `round ${round} ${percent}% of ${peer} (${rate}/s) ${target}: achieved ${paced.achievedRate}/s (sent ${paced.sentRate}/s)  ` +
              `p50 ${figures.p50} ms  p99 ${figures.p99} ms  p99.9 ${figures.p999} ms  errors ${errorsOf([figures])}  ` +
              `load lag p99 ${paced.lagP99} ms, CPU ${paced.cpuUsPerRequest} µs/request  CPU ${figures.targetCpuUsPerCreate} µs/create` +
              (figures.pgBackendCpuUsPerCreate === null
                ? ''
                : `  PostgreSQL: backends ${figures.pgBackendCpuUsPerCreate} µs/create, server ${figures.pgServerCpuUsPerCreate}, ` +
                  `WAL ${figures.walBytesPerCreate} B/create`) +
              `  peak RSS ${figures.peakRssMb} MB\n`,
          );
        }
      }
    }
  }
  const round2 = (value: number): number => Number(value.toFixed(2));
  const summary = (list: Figures[], rate: number): RateSummary => ({
    requestedRate: rate,
    achievedRate: Math.round(median(list.map((f) => f.paced!.achievedRate))),
    sentRate: Math.round(median(list.map((f) => f.paced!.sentRate))),
    p50: round2(median(list.map((f) => f.p50))),
    p99: round2(median(list.map((f) => f.p99))),
    p999: round2(median(list.map((f) => f.p999))),
    errors: list.reduce((sum, f) => sum + f.errors, 0),
    errorsByKind: errorsOf(list),
    loadLagP99: round2(median(list.map((f) => f.paced!.lagP99))),
    loadCpuUsPerRequest: round2(median(list.map((f) => f.paced!.cpuUsPerRequest))),
    targetCpuUsPerCreate: medianOf(list.map((f) => f.targetCpuUsPerCreate)),
    pgBackendCpuUsPerCreate: medianOf(list.map((f) => f.pgBackendCpuUsPerCreate)),
    pgServerCpuUsPerCreate: medianOf(list.map((f) => f.pgServerCpuUsPerCreate)),
    walBytesPerCreate: medianOf(list.map((f) => f.walBytesPerCreate)),
    peakRssMb: Math.max(...list.map((f) => f.peakRssMb)),
    lostLogLines: list.reduce((sum, f) => sum + f.lostLogLines, 0),
  });
  const results = pairs.map(([service, peer]) => ({
    service,
    peer,
    saturated: { service: saturated.get(service) ?? null, peer: saturated.get(peer)! },
    byRate: RATES.map((percent) => {
      const rate = Math.round((saturated.get(peer)! * percent) / 100);
      const ours = rounds.get(key(service, percent, service))!;
      const theirs = rounds.get(key(service, percent, peer))!;
      const roundP99Ratios = ours.map((f, i) => round2(f.p99 / theirs[i].p99));
      return {
        percent,
        rate,
        service: summary(ours, rate),
        peer: summary(theirs, rate),
        p99Ratio: round2(median(ours.map((f) => f.p99)) / median(theirs.map((f) => f.p99))),
        roundP99Ratios,
        medianRoundP99Ratio: round2(median(roundP99Ratios)),
      };
    }),
  }));
  const cell = (value: number | null): string => (value === null ? '' : String(value));
  const lines = [
    '| % of peer | target | asked/s | achieved/s | p50 ms | p99 ms | p99.9 ms | errors | CPU µs/create | PG backends µs/create | PG server µs/create | WAL B/create | load lag p99 ms | peak RSS MB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const ratios: string[] = [];
  const warnings: string[] = [];
  for (const { service, peer, byRate } of results) {
    for (const row of byRate) {
      for (const [target, f] of [
        [service, row.service],
        [peer, row.peer],
      ] as const) {
        lines.push(
          `| ${row.percent} % of ${peer} | ${target} | ${f.requestedRate} | ${f.achievedRate} | ${f.p50} | ${f.p99} | ${f.p999} | ${f.errorsByKind} | ` +
            `${cell(f.targetCpuUsPerCreate)} | ${cell(f.pgBackendCpuUsPerCreate)} | ${cell(f.pgServerCpuUsPerCreate)} | ${cell(f.walBytesPerCreate)} | ` +
            `${f.loadLagP99} | ${f.peakRssMb} |`,
        );
        if (f.achievedRate < 0.97 * f.requestedRate) {
          warnings.push(
            `warning: ${target} at ${row.percent} % of ${peer}: ${f.achievedRate}/s achieved of ${f.requestedRate}/s asked`,
          );
        }
        if (isService(target) && f.lostLogLines > 0) {
          warnings.push(
            `warning: ${target} at ${row.percent} % of ${peer} answered ${f.lostLogLines} requests it did not log`,
          );
        }
      }
      ratios.push(
        `p99 ${service} / ${peer} at ${row.percent} % (${row.rate}/s): ${row.p99Ratio} of the medians ` +
          `(round by round ${row.roundP99Ratios.join(' ')}, median ${row.medianRoundP99Ratio})`,
      );
    }
  }
  process.stdout.write(
    `\nfixed rate (bench/paced-load.ts, ${CONNECTIONS} connections, ${DURATION} s after 2 s of warm-up at the same rate), ` +
      `medians of ${ROUNDS} interleaved rounds (errors: their sums); saturated rates: ` +
      `${[...saturated].map(([target, rate]) => `${target} ${Math.round(rate)}/s`).join(', ')}${given.size > 0 ? ' (BENCH_PEER_RATES where given)' : ''}:\n` +
      `${lines.join('\n')}\n${ratios.join('\n')}\n${warnings.map((line) => `${line}\n`).join('')}`,
  );
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/results/fixed-rate.json'),
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        mode: 'fixed-rate',
        load: 'bench/paced-load.ts',
        node: process.version,
        serviceNodeArgs: SERVICE_NODE_ARGS,
        duration: DURATION,
        rounds: ROUNDS,
        connections: CONNECTIONS,
        rates: RATES,
        results,
        perRound: Object.fromEntries(rounds),
      },
      null,
      2,
    )}\n`,
  );
}

async function main(): Promise<void> {
  if (MODE !== 'saturate' && MODE !== 'fixed-rate')
    throw new Error(`BENCH_MODE is saturate or fixed-rate, not ${MODE}`);
  const fixedPairs = MODE === 'fixed-rate' ? fixedRatePairs() : [];
  let targets =
    MODE === 'fixed-rate'
      ? [...new Set(fixedPairs.flat())]
      : ((process.env.BENCH_TARGETS ?? DEFAULT_TARGETS.join(',')).split(',') as TargetName[]);
  if (targets.some((target) => STORE[target] === 'postgres') && !(await postgresReachable())) {
    process.stdout.write(
      `no PostgreSQL answers at ${POSTGRES_ADMIN} (BENCH_POSTGRES_URL): skipping postgres and node-pg\n`,
    );
    targets = targets.filter((target) => STORE[target] !== 'postgres');
  }
  if (targets.some(isBaseline)) {
    if (BASELINE_MAIN === undefined || !existsSync(BASELINE_MAIN)) {
      const why = BASELINE_MAIN === undefined ? 'BENCH_BASELINE is not set' : `there is no ${BASELINE_MAIN}`;
      process.stderr.write(
        `the -baseline targets run another build, a checkout of it after npm ci && npm run build, named by BENCH_BASELINE: ${why}\n`,
      );
      process.exit(1);
    }
  }
  if (targets.includes('postgres-pgbouncer') && pgbouncerPath() === undefined) {
    process.stdout.write('pgbouncer is not installed (apt-get install pgbouncer): skipping postgres-pgbouncer\n');
    targets = targets.filter((target) => target !== 'postgres-pgbouncer');
  }
  process.stdout.write(
    LOAD === 'wrk'
      ? 'load generator: wrk (1 thread)\n'
      : 'load generator: autocannon (wrk not found: apt-get install wrk); it shares the cores with the server, so figures are low\n',
  );
  process.stdout.write(`service: node ${[...SERVICE_NODE_ARGS, 'dist/main.js'].join(' ')}\n`);
  process.stdout.write('building the service (npm run build)...\n');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const scriptDir = mkdtempSync(join(tmpdir(), 'plant-store-bench-wrk-'));
  const script = join(scriptDir, 'create.lua');
  writeFileSync(script, WRK_SCRIPT);
  if (MODE === 'fixed-rate') {
    try {
      await fixedRate(
        fixedPairs.filter((pair) => pair.every((target) => targets.includes(target))),
        script,
      );
    } finally {
      rmSync(scriptDir, { recursive: true, force: true });
    }
    return;
  }

  const rounds = Object.fromEntries(targets.map((target) => [target, [] as Figures[]])) as Record<
    TargetName,
    Figures[]
  >;
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of targets) {
      const figures = await measure(target, script);
      rounds[target].push(figures);
      process.stdout.write(
        `round ${round} ${target.padEnd(12)} ${figures.createsPerSecond.toFixed(0).padStart(6)} creates/s  ` +
          `p50 ${figures.p50} ms  p99 ${figures.p99} ms  p99.9 ${figures.p999} ms  errors ${figures.errors}  ` +
          `listen overflows ${figures.listenOverflows}  peak RSS ${figures.peakRssMb} MB  ` +
          `written ${figures.writtenKbPerCreate} KB/create  peak WAL ${figures.peakWalMb} MB  ` +
          `CPU ${figures.targetCpuUsPerCreate} µs/create` +
          (figures.pgBackendCpuUsPerCreate === null
            ? ''
            : `  PostgreSQL: backends ${figures.pgBackendCpuUsPerCreate} µs/create, server ${figures.pgServerCpuUsPerCreate}, ` +
              `WAL ${figures.walBytesPerCreate} B/create`) +
          (isService(target) ? `  log lines lost ${figures.lostLogLines}\n` : '\n'),
      );
    }
  }
  rmSync(scriptDir, { recursive: true, force: true });
  const summary = Object.fromEntries(
    targets.map((target) => {
      const list = rounds[target];
      return [
        target,
        {
          createsPerSecond: Math.round(median(list.map((f) => f.createsPerSecond))),
          p50: Number(median(list.map((f) => f.p50)).toFixed(2)),
          p99: Number(median(list.map((f) => f.p99)).toFixed(2)),
          p999: Number(median(list.map((f) => f.p999)).toFixed(2)),
          errors: list.reduce((sum, f) => sum + f.errors, 0),
          listenOverflows: list.reduce((sum, f) => sum + f.listenOverflows, 0),
          peakRssMb: Math.max(...list.map((f) => f.peakRssMb)),
          lostLogLines: list.reduce((sum, f) => sum + f.lostLogLines, 0),
          writtenKbPerCreate: median(list.map((f) => f.writtenKbPerCreate)),
          peakWalMb: Math.max(...list.map((f) => f.peakWalMb)),
          targetCpuUsPerCreate: Number(median(list.map((f) => f.targetCpuUsPerCreate)).toFixed(1)),
          pgBackendCpuUsPerCreate: medianOf(list.map((f) => f.pgBackendCpuUsPerCreate)),
          pgServerCpuUsPerCreate: medianOf(list.map((f) => f.pgServerCpuUsPerCreate)),
          walBytesPerCreate: medianOf(list.map((f) => f.walBytesPerCreate)),
        },
      ];
    }),
  ) as Partial<Record<TargetName, Figures>>;
  // Each ratio two ways: of the medians, and round by round (the pair of one round ran minutes
  // apart at most, so the median of the per-round ratios is the steadier when the machine's speed
  // drifts during a run).
  const pairs: [string, TargetName, TargetName][] = [
    ['sqlite / express-echo', 'sqlite', 'express-echo'],
    ['sqlite-metrics / sqlite', 'sqlite-metrics', 'sqlite'],
    ['sqlite-tracing / sqlite', 'sqlite-tracing', 'sqlite'],
    ['sqlite / node-sqlite', 'sqlite', 'node-sqlite'],
    ['sqlite / node-sqlite-group', 'sqlite', 'node-sqlite-group'],
    ['storm-1000 / sqlite', 'storm-1000', 'sqlite'],
    ['storm-3000 / sqlite', 'storm-3000', 'sqlite'],
    ['nest-bare / node-sqlite-group', 'nest-bare', 'node-sqlite-group'],
    ['nest-log / node-sqlite-group', 'nest-log', 'node-sqlite-group'],
    ['sqlite / nest-log', 'sqlite', 'nest-log'],
    ['sqlite / nest-sqlite', 'sqlite', 'nest-sqlite'],
    ['nest-sqlite / express-echo', 'nest-sqlite', 'express-echo'],
    ['postgres / node-pg', 'postgres', 'node-pg'],
    ['sqlite / sqlite-baseline', 'sqlite', 'sqlite-baseline'],
    ['postgres / postgres-baseline', 'postgres', 'postgres-baseline'],
    ['postgres-pgbouncer / postgres', 'postgres-pgbouncer', 'postgres'],
    ['postgres / express-echo', 'postgres', 'express-echo'],
    ['grown-sqlite / sqlite-random', 'grown-sqlite', 'sqlite-random'],
    ['grown-sqlite-seq / sqlite', 'grown-sqlite-seq', 'sqlite'],
    ['grown-sqlite / grown-node-sqlite-group', 'grown-sqlite', 'grown-node-sqlite-group'],
    ['grown-postgres / postgres-random', 'grown-postgres', 'postgres-random'],
    ['grown-postgres-seq / postgres', 'grown-postgres-seq', 'postgres'],
  ];
  const round2 = (value: number): number => Number(value.toFixed(2));
  const measured = pairs.filter(([, a, b]) => summary[a] !== undefined && summary[b] !== undefined);
  const ratios = Object.fromEntries(
    measured.map(([name, a, b]) => [name, round2(summary[a]!.createsPerSecond / summary[b]!.createsPerSecond)]),
  );
  const roundRatios = Object.fromEntries(
    measured.map(([name, a, b]) => [
      name,
      rounds[a].map((figures, i) => round2(figures.createsPerSecond / rounds[b][i].createsPerSecond)),
    ]),
  );

  const lines = [
    `| target | connections | creates/s | p50 ms | p99 ms | p99.9 ms | errors | listen overflows | peak RSS MB | KB written/create | peak WAL MB | CPU µs/create | PG backends µs/create | PG server µs/create | WAL B/create |`,
    `|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|`,
    ...targets.map((target) => {
      const f = summary[target]!;
      const cell = (value: number | null): string => (value === null ? '' : String(value));
      return (
        `| ${target} | ${connectionsFor(target)} | ${f.createsPerSecond} | ${f.p50} | ${f.p99} | ${f.p999} | ${f.errors} | ${f.listenOverflows} | ` +
        `${f.peakRssMb} | ${f.writtenKbPerCreate} | ${f.peakWalMb} | ${f.targetCpuUsPerCreate} | ${cell(f.pgBackendCpuUsPerCreate)} | ` +
        `${cell(f.pgServerCpuUsPerCreate)} | ${cell(f.walBytesPerCreate)} |`
      );
    }),
  ];
  process.stdout.write(
    `\n${LOAD}, medians of ${ROUNDS} interleaved rounds (errors and listen overflows: their sums), ${DURATION} s each, every 200 durable; ` +
      `service: node ${[...SERVICE_NODE_ARGS, 'dist/main.js'].join(' ')}:\n` +
      `${lines.join('\n')}\n` +
      Object.entries(ratios)
        .map(
          ([name, value]) =>
            `${name}: ${value} (round by round ${roundRatios[name].join(' ')}, median ${round2(median(roundRatios[name]))})`,
        )
        .join('\n') +
      '\n',
  );
  for (const target of targets.filter(isService)) {
    const lost = summary[target]!.lostLogLines;
    if (lost > 0) process.stdout.write(`warning: ${target} answered ${lost} requests it did not log\n`);
  }
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/results/latest.json'),
    `${JSON.stringify({ date: new Date().toISOString(), load: LOAD, node: process.version, serviceNodeArgs: SERVICE_NODE_ARGS, duration: DURATION, rounds: ROUNDS, connections: CONNECTIONS, summary, ratios, roundRatios, perRound: rounds }, null, 2)}\n`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
