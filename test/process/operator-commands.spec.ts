import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../support/spawn';

const ROOT = process.cwd();
const COMMANDS = ['token', 'plants', 'store'] as const;

/**
 * The operator's commands (nest-commander over the server's modules) read their configuration
 * and open the store only to do their work: help and a wrong command line need neither, so they
 * answer as they always did, whatever DATABASE_URL names, and leave no store behind.
 */
describe('the operator commands, before any work', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-commands-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const command = (name: string, args: string[], databaseUrl: string) =>
    run(process.execPath, [join(ROOT, `dist/cli/${name}.js`), ...args], { DATABASE_URL: databaseUrl });

  it.each(COMMANDS)(
    '%s: --help opens no store and says nothing of Nest, even when the store is unreachable',
    async (name) => {
      for (const url of [
        `sqlite:${join(dir, name, 'store.sqlite')}`,
        'postgres://nobody@127.0.0.1:1/none',
        'mysql://x',
      ]) {
        const help = await command(name, ['--help'], url);
        expect({ url, code: help.code, stderr: help.stderr }).toEqual({ url, code: 0, stderr: '' });
        expect(help.stdout).toMatch(/^usage: /);
      }
      expect(existsSync(join(dir, name))).toBe(false);
    },
  );

  it.each(COMMANDS)(
    '%s: a wrong command line is answered with the usage and exit 2, the store untouched',
    async (name) => {
      const wrong = await command(name, ['frobnicate'], 'postgres://nobody@127.0.0.1:1/none');
      expect(wrong.code).toBe(2);
      expect(wrong.stdout).toBe('');
      expect(wrong.stderr).toMatch(new RegExp(`^${name}: (unknown command "frobnicate"\\n)?usage: `));
    },
  );
});
