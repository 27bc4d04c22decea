import { jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../support/spawn';

jest.setTimeout(120_000);

const ROOT = process.cwd();

/** The files `npm run create-path` finds running code on one create, with FAST_PATH as given. */
async function createPath(fastPath: 'on' | 'off'): Promise<string[]> {
  const result = await run(process.execPath, [join(ROOT, 'scripts/create-path.mjs'), '--json'], {
    FAST_PATH: fastPath,
  });
  if (result.code !== 0) throw new Error(`create-path failed: ${result.stderr}`);
  return (JSON.parse(result.stdout) as { files: string[] }).files;
}

/**
 * The request path as docs/architecture.md names it: the numbered files run with FAST_PATH=off;
 * by default, those less the lines "- not `…`" plus the lines "- also `…`".
 */
function documented(): { off: string[]; on: string[] } {
  const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = /^## The request path\n([\s\S]*?)^## /m.exec(text)?.[1] ?? '';
  const paths = (pattern: RegExp): string[] => [...section.matchAll(pattern)].map((match) => match[1]);
  const off = paths(/^\d+\. `(src\/[^`]+)`/gm);
  const not = new Set(paths(/^- not `(src\/[^`]+)`/gm));
  const on = [...off.filter((file) => !not.has(file)), ...paths(/^- also `(src\/[^`]+)`/gm)];
  return { off: off.sort(), on: on.sort() };
}

describe('one create', () => {
  it.each(['off', 'on'] as const)(
    'with FAST_PATH=%s runs code in exactly the files docs/architecture.md names',
    async (fastPath) => {
      expect(await createPath(fastPath)).toEqual(documented()[fastPath]);
    },
  );

  it.each([
    ['off', 15],
    ['on', 18],
  ] as const)(
    'with FAST_PATH=%s visits at most %d files, in at most 6 folders, none over 300 lines',
    (fastPath, most) => {
      const files = documented()[fastPath];
      expect(files.length).toBeLessThanOrEqual(most);
      expect(new Set(files.map((file) => file.split('/')[1])).size).toBeLessThanOrEqual(6);
      const long = files.filter((file) => readFileSync(join(ROOT, file), 'utf8').trimEnd().split('\n').length > 300);
      expect(long).toEqual([]);
    },
  );

  it('with FAST_PATH=off runs nothing of src/fast-path/', () => {
    expect(documented().off.filter((file) => file.startsWith('src/fast-path/'))).toEqual([]);
  });
});
