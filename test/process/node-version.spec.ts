import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAIN, TOKEN_CLI } from '../support/server-process';
import { run } from '../support/spawn';

const ROOT = process.cwd();

/** This machine's own `node`, when it is older than the supported lines (Node 20 on CI's machine). */
function oldNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    try {
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
      const [major, minor] = version.slice(1).split('.').map(Number);
      if (major < 22 || (major === 22 && minor < 22)) return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

const old = oldNode();

(old === undefined ? describe.skip : describe)('on a Node.js older than 22.22.3', () => {
  const env = { PATH: `${join(old ?? '/usr/bin/node', '..')}:/usr/bin:/bin`, DATABASE_URL: 'sqlite::memory:' };

  const oneLine = (stderr: string): void => {
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/needs Node\.js 24\.15 or newer \(or 22\.22\.3 or a newer 22\).*scripts\/node\.sh/);
  };

  it('npm ci says one line naming the version and scripts/node.sh, and fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-old-node-'));
    try {
      for (const file of [
        'package.json',
        'package-lock.json',
        '.npmrc',
        'client/package.json',
        'scripts/check-node.mjs',
      ]) {
        mkdirSync(join(dir, file, '..'), { recursive: true });
        copyFileSync(join(ROOT, file), join(dir, file));
      }
      // npm runs a project's own preinstall only once it has installed the dependencies.
      const result = await run('npm', ['ci', '--no-audit', '--no-fund'], env, 240_000, dir);
      expect(result.code).not.toBe(0);
      expect(result.stdout).toBe('');
      oneLine(result.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);

  it.each(['start', 'test', 'run token -- list', 'run build'])(
    'npm %s says the same one line, and runs nothing',
    async (command) => {
      const result = await run('npm', command.split(' '), env, 60_000, ROOT);
      expect(result.code).not.toBe(0);
      expect(result.stdout).toBe('');
      oneLine(result.stderr);
    },
  );

  it('npm test stops at once with one line naming the version and scripts/node.sh, running no suite', async () => {
    const result = await run(old!, [join(ROOT, 'node_modules/jest/bin/jest.js'), '--selectProjects', 'unit'], env);
    expect(result.code).toBe(1);
    oneLine(result.stderr);
  });

  it.each([
    ['the server', [MAIN]],
    ['the token command', [TOKEN_CLI, 'list']],
    ['the plants command', [join(ROOT, 'dist/cli/plants.js'), 'export']],
  ])(
    '%s exits 1 with one line naming the version and scripts/node.sh, before loading native code',
    async (_name, args) => {
      const result = await run(old!, args, env);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      oneLine(result.stderr);
    },
  );
});
