/**
 * `npm run bench:import`: how fast `plants import` and `plants export` move plants, and how much
 * memory each takes, on both stores.
 *
 * For each of BENCH_IMPORT_PLANTS (default 200000,2000000) it writes a file of that many plants as
 * JSON lines in the export's own format and order (`{"id":9007199254740993,"name":"Plant 0",
 * "tag":"aroid"}`, ids exact int64 past 2^53 and rising, every third plant without a tag), then
 * for each of BENCH_IMPORT_STORES (default sqlite,postgres), on a fresh store (a SQLite file in
 * the temporary folder, a fresh database on BENCH_POSTGRES_URL's server):
 *
 *   import   `node FLAGS dist/cli/plants.js import FILE`, FLAGS those of `npm run plants`: wall
 *            time from spawn to exit (the command's start and migrations included), plants/s,
 *            and its peak RSS (/usr/bin/time's %M, the kernel's own maximum), checking that it
 *            says every plant was created
 *   export   `node FLAGS dist/cli/plants.js export > FILE`: the same figures, and whether the file it
 *            wrote is byte for byte the file imported
 *
 * The commands' stderr is ignored unless one fails (progress reports land there). Then it says
 * how long 40 M plants would take at the rate of the largest import: an extrapolation.
 * Prints a table and writes bench/results/import.json. The build comes first (npm run build).
 *
 * `npm run bench:import -- --sizes` measures bytes per plant on disk instead (bench/store-size.ts,
 * settings BENCH_SIZE_PLANTS and BENCH_SIZE_RANDOM_PLANTS).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onPostgres, POSTGRES_ADMIN, postgresUrl, ROOT } from './stores';
import { storeSizes } from './store-size';

const list = (value: string | undefined, fallback: string): string[] => (value ?? fallback).split(',').filter(Boolean);
const COUNTS = list(process.env.BENCH_IMPORT_PLANTS, '200000,2000000').map((each) => Number(each.replace(/_/g, '')));
const STORES = list(process.env.BENCH_IMPORT_STORES, 'sqlite,postgres') as ('sqlite' | 'postgres')[];
const PLANTS_CLI = join(ROOT, 'dist/cli/plants.js');
/** The node flags of `npm run plants` (its heap's sizes), with which docs/operations.md states the commands' memory. */
const PLANTS_FLAGS = /\bnode ((?:--\S+ )*)dist\/cli\/plants\.js/
  .exec(
    (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
      .plants,
  )![1]
  .split(' ')
  .filter(Boolean);
const TIME = '/usr/bin/time';

/** Writes `count` plants in the export's format and id order; the file's size in bytes. */
function writePlants(file: string, count: number): number {
  const fd = openSync(file, 'w');
  let bytes = 0;
  try {
    const first = 2n ** 53n + 1n;
    for (let start = 0; start < count; start += 10_000) {
      let text = '';
      for (let i = start; i < Math.min(count, start + 10_000); i++) {
        const id = first + BigInt(i) * 7n;
        text += i % 3 === 2 ? `{"id":${id},"name":"Plant ${i}"}\n` : `{"id":${id},"name":"Plant ${i}","tag":"aroid"}\n`;
      }
      bytes += writeSync(fd, text);
    }
  } finally {
    closeSync(fd);
  }
  return bytes;
}

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

interface Run {
  seconds: number;
  peakRssMb: number;
  stdout: string;
}

/** A process and its children, the children first (so none is left behind its parent). */
function killTree(pid: number): void {
  let children: number[] = [];
  try {
    children = readChildren(pid);
  } catch {
    // gone
  }
  for (const child of children) killTree(child);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}

function readChildren(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text === '' ? [] : text.split(/\s+/).map(Number);
}

let running: ChildProcess | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (running?.pid !== undefined) killTree(running.pid);
    process.exit(130);
  });
}

/**
 * Runs `node dist/cli/plants.js ARGS` under /usr/bin/time, its stdout to `stdoutFile` (or
 * collected); its wall time and peak RSS. Fails with its stderr if it fails.
 */
async function runPlants(args: string[], url: string, stdoutFile?: string): Promise<Run> {
  const out = stdoutFile === undefined ? 'pipe' : openSync(stdoutFile, 'w');
  const started = performance.now();
  const child = spawn(TIME, ['-f', 'BENCH_MAXRSS_KB %M', process.execPath, ...PLANTS_FLAGS, PLANTS_CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url },
    stdio: ['ignore', out, 'pipe'],
  });
  running = child;
  if (typeof out === 'number') closeSync(out);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  // Progress may come here: only the tail is kept, for a failure's message and time's line.
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-65_536)));
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    const seconds = (performance.now() - started) / 1000;
    const rss = /BENCH_MAXRSS_KB (\d+)\s*$/.exec(stderr);
    if (code !== 0 || rss === null) {
      throw new Error(`plants ${args.join(' ')} exited with ${code}:\n${stderr}\n${stdout}`);
    }
    return { seconds, peakRssMb: Number(rss[1]) / 1024, stdout };
  } finally {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) killTree(child.pid);
    running = undefined;
  }
}

interface Figures {
  store: 'sqlite' | 'postgres';
  plants: number;
  fileMb: number;
  importSeconds: number;
  importPerSecond: number;
  importPeakRssMb: number;
  exportSeconds: number;
  exportPerSecond: number;
  exportPeakRssMb: number;
  exportIdentical: boolean;
}

async function measure(store: 'sqlite' | 'postgres', plants: number, file: string, dir: string): Promise<Figures> {
  let url: string;
  let drop: () => Promise<void>;
  if (store === 'sqlite') {
    url = `sqlite:${join(dir, `import-${plants}.sqlite`)}`;
    drop = () => {
      for (const suffix of ['', '-wal', '-shm', '.server-lock']) {
        rmSync(`${join(dir, `import-${plants}.sqlite`)}${suffix}`, { force: true });
      }
      return Promise.resolve();
    };
  } else {
    const name = `plant_store_import_${randomBytes(4).toString('hex')}`;
    await onPostgres(POSTGRES_ADMIN, (admin) => admin.query(`CREATE DATABASE "${name}"`));
    url = postgresUrl(name);
    drop = async () => {
      await onPostgres(POSTGRES_ADMIN, (admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    };
  }
  const exported = join(dir, `export-${store}-${plants}.jsonl`);
  try {
    const imported = await runPlants(['import', file], url);
    if (!imported.stdout.includes(`imported: ${plants} created,`)) {
      throw new Error(`the import of ${plants} plants said: ${imported.stdout}`);
    }
    const exportRun = await runPlants(['export'], url, exported);
    const identical = (await sha256(exported)) === (await sha256(file));
    return {
      store,
      plants,
      fileMb: statSync(file).size / 1024 / 1024,
      importSeconds: imported.seconds,
      importPerSecond: plants / imported.seconds,
      importPeakRssMb: imported.peakRssMb,
      exportSeconds: exportRun.seconds,
      exportPerSecond: plants / exportRun.seconds,
      exportPeakRssMb: exportRun.peakRssMb,
      exportIdentical: identical,
    };
  } finally {
    rmSync(exported, { force: true });
    await drop();
  }
}

async function main(): Promise<void> {
  const sizes = process.argv.includes('--sizes');
  if (!sizes && !existsSync(TIME))
    throw new Error(`${TIME} is needed for the commands' peak RSS (apt-get install time)`);
  process.stdout.write('building the service (npm run build)...\n');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (sizes) return storeSizes();
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-bench-import-'));
  const results: Figures[] = [];
  try {
    for (const plants of COUNTS) {
      const file = join(dir, `plants-${plants}.jsonl`);
      writePlants(file, plants);
      for (const store of STORES) {
        const figures = await measure(store, plants, file, dir);
        results.push(figures);
        process.stdout.write(
          `${store} ${plants} plants: import ${figures.importSeconds.toFixed(1)} s ` +
            `(${figures.importPerSecond.toFixed(0)} plants/s, peak RSS ${figures.importPeakRssMb.toFixed(0)} MB), ` +
            `export ${figures.exportSeconds.toFixed(1)} s (${figures.exportPerSecond.toFixed(0)} plants/s, ` +
            `peak RSS ${figures.exportPeakRssMb.toFixed(0)} MB), export identical to the file: ${figures.exportIdentical}\n`,
        );
      }
      rmSync(file, { force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = [
    '| store | plants | file MB | import s | imported/s | import peak RSS MB | export s | exported/s | export peak RSS MB | export = file |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(
      (f) =>
        `| ${f.store} | ${f.plants} | ${f.fileMb.toFixed(1)} | ${f.importSeconds.toFixed(1)} | ${f.importPerSecond.toFixed(0)} | ` +
        `${f.importPeakRssMb.toFixed(0)} | ${f.exportSeconds.toFixed(1)} | ${f.exportPerSecond.toFixed(0)} | ` +
        `${f.exportPeakRssMb.toFixed(0)} | ${f.exportIdentical ? 'yes' : 'NO'} |`,
    ),
  ];
  const largest = Math.max(...COUNTS);
  const projections = STORES.map((store) => {
    const at = results.find((f) => f.store === store && f.plants === largest)!;
    return `${store}: 40,000,000 plants would take ${(40e6 / at.importPerSecond / 60).toFixed(0)} min to import and ${(40e6 / at.exportPerSecond / 60).toFixed(0)} min to export at the rates of ${largest} plants (an extrapolation)`;
  });
  process.stdout.write(`\n${lines.join('\n')}\n${projections.join('\n')}\n`);
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/results/import.json'),
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, results }, null, 2)}\n`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench:import failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
