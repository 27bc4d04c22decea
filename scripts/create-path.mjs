// Prints the project's files that run code on one create: the built server on a fresh SQLite
// store with the default settings, two warm-up creates, then
// V8's call counts (precise coverage, through node:inspector) over one more, twice over. `--json`
// prints { files, folders } for a test to read. Needs `npm run build` first.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const json = process.argv.includes('--json');
const dir = mkdtempSync(join(tmpdir(), 'plant-store-create-path-'));
const env = { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'store.sqlite')}`, PORT: '0', HOST: '127.0.0.1' };

function post(port, token, id) {
  const body = JSON.stringify({ id, name: 'Fern' });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        port,
        host: '127.0.0.1',
        agent: false,
        method: 'POST',
        path: '/plants',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`create answered ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject).end(body);
  });
}

/** Sends the server's preload one command and resolves with its answer. */
function ask(child, command) {
  return new Promise((resolve) => {
    child.once('message', resolve);
    child.send(command);
  });
}

const token = execFileSync(process.execPath, [join(dist, 'cli/token.js'), 'create', 'create-path'], { env })
  .toString()
  .trimEnd()
  .split('\n')
  .at(-1);
const child = spawn(
  process.execPath,
  ['--import', join(root, 'scripts/create-path-preload.mjs'), join(dist, 'main.js')],
  {
    env,
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  },
);
let out = '';
child.stdout.on('data', (chunk) => (out += chunk));
/** Resolves once the server's log holds `count` request lines: a create ends with its line. */
async function logged(count) {
  while ((out.match(/"msg":"request completed"/g) ?? []).length < count) {
    await new Promise((resolve) => child.stdout.once('data', resolve));
  }
}
try {
  const port = await new Promise((resolve, reject) => {
    const listening = () => {
      const match = /"port":(\d+),"msg":"Plant Store listening/.exec(out);
      if (match) resolve(Number(match[1]));
      else child.stdout.once('data', listening);
    };
    listening();
    child.on('exit', (code) => reject(new Error(`server exited (${code}) before listening:\n${out}`)));
  });
  await post(port, token, 1);
  await post(port, token, 2);
  // Twice, and only what ran both times: a timer of the server's (a deadline check each second)
  // may fire during one create, and is not the create's.
  const runs = [];
  for (const id of [3, 4]) {
    await ask(child, 'reset');
    await post(port, token, id);
    await logged(id); // the create's own line, written once it is answered, is part of it
    runs.push(new Set(await ask(child, 'take')));
  }
  const ran = [...runs[0]].filter((file) => runs[1].has(file));
  const files = ran
    .filter((file) => file.startsWith(`${dist}/`))
    .map((file) => relative(dist, file).replace(/\.js$/, '.ts'))
    .map((file) => `src/${file}`)
    .sort();
  // Folders as src/ is divided: `src/plants/dto/x.ts` is in plants.
  const folders = [...new Set(files.map((file) => file.split('/')[1]))].sort();
  if (json) {
    process.stdout.write(`${JSON.stringify({ files, folders })}\n`);
  } else {
    process.stdout.write(`${files.join('\n')}\n${files.length} files in ${folders.length} folders\n`);
  }
} finally {
  child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
