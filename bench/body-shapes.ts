/**
 * `npm run bench:shapes`: what a create costs by the shape of its body. The built service (as
 * `npm run start:prod` runs it, on a fresh SQLite file) is sent, over one connection, the same
 * valid create again and again (a safe retry after the first), its body padded to 66 KB by an
 * unknown property of one shape: one string, many small numbers, many small objects, many keys, a
 * long number, escapes, deep nesting (what `src/http/json-body.spec.ts` reads, costed here).
 * Three rounds of BENCH_DURATION seconds (default 5) per shape, interleaved; prints the median
 * time per request of each shape and its ratio to the one-string body. Needs `wrk`.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = 3;
const SIZE = 66 * 1024;

const head = '{"id":1,"name":"shapes","junk":';
const fill = (open: string, unit: string, close: string): string =>
  open + unit.repeat(Math.floor((SIZE - head.length - open.length - close.length - 1) / unit.length)) + close;
const DEPTH = Math.floor((SIZE - head.length) / 2) - 1;
const SHAPES: Record<string, string> = {
  'one string': `${head}${fill('"', 'a', '"')}}`,
  'small numbers': `${head}${fill('[', '1,', '1]')}}`,
  'small objects': `${head}${fill('[', '{},', '1]')}}`,
  keys: `${head}${fill('{', '"k":1,', '"k":1}')}}`,
  'a long number': `${head}${fill('1', '0', '1')}}`,
  escapes: `${head}${fill('"', '\\u0041', '"')}}`,
  'deep nesting': `${head}${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}`,
};

function startService(url: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    ['--max-semi-space-size=32', '--min-semi-space-size=32', '--no-allocation-site-pretenuring', 'dist/main.js'],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    let seen = '';
    child.on('exit', (code) => reject(new Error(`the service exited with ${code}`)));
    const listening = (chunk: Buffer): void => {
      seen += chunk.toString();
      const port = /"port":(\d+),"msg":"Plant Store listening/.exec(seen)?.[1];
      if (port === undefined) return;
      // Its request lines go on being read, and dropped.
      child.stdout.off('data', listening);
      child.stdout.on('data', () => undefined);
      resolve({ child, port: Number(port) });
    };
    child.stdout.on('data', listening);
  });
}

/** Median latency of one wrk run, in ms, over one connection. */
function drive(port: number, script: string): number {
  const out = spawnSync(
    'wrk',
    ['-t1', '-c1', `-d${DURATION}s`, '--latency', '-s', script, `http://127.0.0.1:${port}/plants`],
    { encoding: 'utf8' },
  ).stdout;
  const line = /SHAPE_JSON (\{.*\})/.exec(out)?.[1];
  if (line === undefined) throw new Error(`wrk said:\n${out}`);
  const { mean, non2xx } = JSON.parse(line) as { mean: number; non2xx: number };
  if (non2xx > 0) throw new Error(`${non2xx} answers were not 200`);
  return mean / 1000;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  if (spawnSync('wrk', ['--version']).error !== undefined)
    throw new Error('wrk is not installed (apt-get install wrk)');
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore' });
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-shapes-'));
  const url = `sqlite:${join(dir, 'store.sqlite')}`;
  const token = execFileSync(process.execPath, [join(ROOT, 'dist/cli/token.js'), 'create', 'shapes'], {
    env: { ...process.env, DATABASE_URL: url },
    encoding: 'utf8',
  })
    .trimEnd()
    .split('\n')
    .at(-1)!;
  const scripts = Object.fromEntries(
    Object.entries(SHAPES).map(([shape, body]) => {
      const script = join(dir, `${shape.replace(/ /g, '-')}.lua`);
      writeFileSync(
        script,
        `wrk.method = "POST"
wrk.body = ${JSON.stringify(body)}
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer ${token}"
local non2xx = 0
function response(status) if status ~= 200 then non2xx = non2xx + 1 end end
function done(summary, latency) io.write(string.format('SHAPE_JSON {"mean":%f,"non2xx":%d}\\n', latency.mean, non2xx)) end
`,
      );
      return [shape, script];
    }),
  );
  const { child, port } = await startService(url);
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(SHAPES).map((shape) => [shape, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const shape of Object.keys(SHAPES)) times[shape].push(drive(port, scripts[shape]));
    }
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    rmSync(dir, { recursive: true, force: true });
  }
  const base = median(times['one string']);
  for (const [shape, list] of Object.entries(times)) {
    const ms = median(list);
    console.log(
      `${shape.padEnd(14)} ${ms.toFixed(3)} ms a create (rounds ${list.map((t) => t.toFixed(3)).join(', ')})  ×${(ms / base).toFixed(2)}`,
    );
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
