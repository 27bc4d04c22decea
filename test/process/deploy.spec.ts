import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from '../support/sockets';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { validate } from 'dockerfile-utils';
import { SHUTDOWN_DEADLINE_MS } from '../../src/http/open-requests';
import { DOCKERFILE, finalStage, instructions } from '../support/dockerfile';
import { onPath } from '../support/patroni';

const ROOT = process.cwd();
const UNIT = readFileSync(join(ROOT, 'deploy/plant-store.service'), 'utf8');

/** The node flags of `npm run start:prod`, which both recipes must use. */
function startProdFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = pkg.scripts['start:prod'].replace(/^node scripts\/check-node\.mjs && /, '').split(/\s+/);
  return words.slice(1, words.indexOf('dist/main.js'));
}

/** Starts `node <args>` in `cwd` (by default the repository, where `dist/` is built) and waits for it to listen. */
async function runService(args: string[], env: Record<string, string | undefined>, cwd = ROOT): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (/listening on http/.test(out)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
  return child;
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/**
 * The deployment recipes under deploy/: no container engine or systemd runs here, so what can
 * be checked is: the Dockerfile lints clean, everything it copies exists, its command starts
 * the service, its health check passes and SIGTERM stops it with 0; the unit's command does the
 * same, with the settings the docs promise.
 */
describe('deploy/Dockerfile', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-deploy-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lints clean (dockerfile-utils)', () => {
    expect(validate(DOCKERFILE).map((diagnostic) => diagnostic.message)).toEqual([]);
  });

  it('copies only what exists in the repository and is not in .dockerignore', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').filter(Boolean);
    const sources = instructions()
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(' ').slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect({ source, exists: existsSync(join(ROOT, source)) }).toEqual({ source, exists: true });
      expect(ignored).not.toContain(source);
    }
  });

  it('exposes the metrics port, listening on every interface of the container', () => {
    const last = finalStage();
    const env = last.find((i) => i.keyword === 'ENV')!.args;
    const port = /\bMETRICS_PORT=(\d+)/.exec(env)?.[1];
    expect(port).toBeDefined();
    expect(env).toMatch(/\bMETRICS_HOST=0\.0\.0\.0\b/);
    expect(last.find((i) => i.keyword === 'EXPOSE')!.args.split(' ')).toEqual(['3000', port]);
  });

  it('runs as a non-root user, with the memory flags, and stops on SIGTERM', () => {
    const last = finalStage();
    expect(last.find((i) => i.keyword === 'USER')?.args).toBe('node');
    expect(last.find((i) => i.keyword === 'STOPSIGNAL')?.args).toBe('SIGTERM');
    const cmd = JSON.parse(last.find((i) => i.keyword === 'CMD')!.args) as string[];
    expect(cmd).toEqual(['node', ...startProdFlags(), 'dist/main.js']);
  });

  it('its command serves, its health check passes, and SIGTERM ends it with 0', async () => {
    const last = finalStage();
    const cmd = JSON.parse(last.find((i) => i.keyword === 'CMD')!.args) as string[];
    const healthArgs = last.find((i) => i.keyword === 'HEALTHCHECK')!.args.replace(/^.*?CMD\s+/, '');
    const health = JSON.parse(healthArgs) as string[];
    const port = String(await freePort());
    const env = { HOST: '127.0.0.1', PORT: port, DATABASE_URL: `sqlite:${join(dir, 'docker.sqlite')}` };
    const child = await runService(cmd.slice(1), env);
    try {
      const checked = spawnSync(process.execPath, health.slice(1), {
        env: { ...process.env, ...env },
        timeout: 10_000,
      });
      expect(checked.status).toBe(0);
    } finally {
      const exited = exitOf(child);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });
});

/**
 * The image's production install, made here as its final stage makes it: its own folder with
 * the package files it copies, its `npm ci` command, and the built `dist/`. No compiler may be
 * in it (typescript, ts-node and SWC are optional peers of @nestjs/swagger and typeorm, which a
 * bare `--omit=dev` keeps), and the service and its commands must run from it.
 */
describe("deploy/Dockerfile's production install", () => {
  let app: string;
  beforeAll(() => {
    app = mkdtempSync(join(tmpdir(), 'plant-store-production-'));
  });
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  // npm ci fetches and unpacks every production dependency: minutes on a loaded machine.
  it('installs no compiler, and the service and its commands run from dist/ with it, through npm too', async () => {
    const last = finalStage();
    const copied = last
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => {
        const words = i.args.split(' ');
        return words.slice(0, -1).map((source) => ({ source, to: words.at(-1)! }));
      });
    for (const { source, to } of copied) {
      mkdirSync(join(app, to), { recursive: true });
      copyFileSync(join(ROOT, source), join(app, to.endsWith('/') ? join(to, basename(source)) : to));
    }
    const install = last
      .filter((i) => i.keyword === 'RUN')
      .flatMap((i) => i.args.split('&&').map((command) => command.trim()))
      .find((command) => command.startsWith('npm ci'))!;
    expect(install).toMatch(/^npm ci --omit=dev\b/);
    const installed = spawnSync(install, { cwd: app, shell: true, encoding: 'utf8', timeout: 240_000 });
    expect(installed.stderr.split('\n').filter((line) => /ERR!/.test(line))).toEqual([]);
    expect([installed.status, installed.stderr]).toEqual([0, '']);
    for (const compiler of ['typescript', 'ts-node', '@swc/core']) {
      expect({ compiler, installed: existsSync(join(app, 'node_modules', compiler)) }).toEqual({
        compiler,
        installed: false,
      });
    }
    cpSync(join(ROOT, 'dist'), join(app, 'dist'), { recursive: true });

    const env = { ...process.env, DATABASE_URL: `sqlite:${join(app, 'production.sqlite')}` };
    const token = spawnSync(process.execPath, ['dist/cli/token.js', 'create', 'production'], {
      cwd: app,
      env,
      encoding: 'utf8',
    });
    expect(token.status).toBe(0);
    const store = spawnSync(process.execPath, ['dist/cli/store.js', 'status'], { cwd: app, env, encoding: 'utf8' });
    expect(store.status).toBe(0);
    const plants = spawnSync(process.execPath, ['dist/cli/plants.js', 'export'], { cwd: app, env, encoding: 'utf8' });
    expect([plants.status, plants.stdout]).toEqual([0, '']);
    // As the docs give them: through npm, in an install that holds dist/ and scripts/check-node.mjs.
    const npmToken = spawnSync('npm', ['run', '--silent', 'token', '--', 'create', 'through-npm'], {
      cwd: app,
      env,
      encoding: 'utf8',
    });
    expect([npmToken.status, npmToken.stderr]).toEqual([0, '']);
    expect(npmToken.stdout.trimEnd().split('\n').at(-1)).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    const npmPlants = spawnSync('npm', ['run', '--silent', 'plants', '--', 'export'], {
      cwd: app,
      env,
      encoding: 'utf8',
    });
    expect([npmPlants.status, npmPlants.stdout]).toEqual([0, '']);

    const cmd = JSON.parse(last.find((i) => i.keyword === 'CMD')!.args) as string[];
    const port = await freePort();
    const child = await runService(cmd.slice(1), { ...env, HOST: '127.0.0.1', PORT: String(port) }, app);
    try {
      const created = await fetch(`http://127.0.0.1:${port}/plants`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${token.stdout.trimEnd().split('\n').at(-1)}`,
          'Content-Type': 'application/json',
        },
        body: '{"id":1,"name":"from production"}',
      });
      expect(created.status).toBe(200);
    } finally {
      const exited = exitOf(child);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  }, 300_000);
});

describe('deploy/plant-store.service', () => {
  const settings = (key: string): string[] =>
    UNIT.split('\n')
      .filter((line) => line.startsWith(`${key}=`))
      .map((line) => line.slice(key.length + 1));

  it('has the settings an operator relies on', () => {
    expect(settings('KillSignal')).toEqual(['SIGTERM']);
    expect(settings('Restart')).toEqual(['on-failure']);
    expect(Number(settings('TimeoutStopSec')[0])).toBeGreaterThan(SHUTDOWN_DEADLINE_MS / 1000);
    expect(settings('WorkingDirectory')[0]).toMatch(/^\//);
    const databaseUrl = settings('Environment').find((value) => value.startsWith('DATABASE_URL='))!;
    expect(databaseUrl).toMatch(/^DATABASE_URL=sqlite:\//); // absolute, not relative to the working directory
    const exec = settings('ExecStart')[0].split(' ');
    // The Node the docs tell the operator to install (Debian's own is too old).
    expect(exec).toEqual(['/usr/local/bin/node', ...startProdFlags(), 'dist/main.js']);
    expect(readFileSync(join(ROOT, 'docs/operations.md'), 'utf8')).toContain('`/usr/local/bin/node`');
    expect(settings('StateDirectory')).toEqual(['plant-store']);
    expect(databaseUrl).toBe('DATABASE_URL=sqlite:/var/lib/plant-store/plant-store.sqlite');
  });

  it('is hardened to an exposure of 2.5 or lower (systemd-analyze security), where systemd is installed', () => {
    const analyzed = spawnSync(
      'systemd-analyze',
      ['security', '--offline=true', '--no-pager', join(ROOT, 'deploy/plant-store.service')],
      { encoding: 'utf8' },
    );
    if (analyzed.error !== undefined) return; // no systemd here
    const exposure = Number(/Overall exposure level for plant-store\.service: ([\d.]+)/.exec(analyzed.stdout)?.[1]);
    expect(exposure).toBeLessThanOrEqual(2.5);
  });

  it('passes systemd-analyze verify, where systemd is installed', () => {
    // With this machine's node in place of /usr/local/bin/node, which verify requires to exist.
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-verify-'));
    const unit = join(dir, 'plant-store.service');
    writeFileSync(unit, UNIT.replace('ExecStart=/usr/local/bin/node ', `ExecStart=${process.execPath} `));
    const verified = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    rmSync(dir, { recursive: true, force: true });
    if (verified.error !== undefined) return; // no systemd here
    expect(verified.stderr).toBe('');
    expect(verified.status).toBe(0);
  });

  it('its command serves, and SIGTERM ends it with 0', async () => {
    const exec = settings('ExecStart')[0].split(' ');
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-unit-'));
    try {
      const child = await runService(exec.slice(1), {
        HOST: '127.0.0.1',
        PORT: String(await freePort()),
        DATABASE_URL: `sqlite:${join(dir, 'unit.sqlite')}`,
      });
      const exited = exitOf(child);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the proxies of deploy/', () => {
  const operations = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  /** The code blocks of docs/operations.md, their list indentation taken off. */
  const blocks = [...operations.matchAll(/^( *)```\w*\n([\s\S]*?)^\1```/gm)].map(([, indent, body]) =>
    body
      .split('\n')
      .map((line) => line.slice(indent.length))
      .join('\n'),
  );

  it.each(['patroni.yml', 'node.env', 'haproxy.cfg'])(
    '%s is shown whole in docs/operations.md, as npm run test:failover runs it',
    (file) => {
      expect(blocks).toContain(readFileSync(join(ROOT, 'deploy/patroni', file), 'utf8'));
    },
  );

  it('the proxy recipe, deploy/haproxy/plant-store.cfg, is shown whole in docs/operations.md', () => {
    expect(blocks).toContain(readFileSync(join(ROOT, 'deploy/haproxy/plant-store.cfg'), 'utf8'));
  });

  it.each(['deploy/patroni/haproxy.cfg', 'deploy/haproxy/plant-store.cfg'])(
    '%s passes haproxy -c, where HAProxy is installed',
    (file) => {
      if (!onPath('haproxy')) return;
      const checked = spawnSync('haproxy', ['-c', '-f', join(ROOT, file)], { encoding: 'utf8' });
      expect(checked.stdout + checked.stderr).toMatch(/Configuration file is valid/);
    },
  );
});
