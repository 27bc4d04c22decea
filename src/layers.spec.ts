import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

/**
 * The layers of `src/`, lowest first: a module may import from its own layer and those below,
 * never from one above. The application's files (AppModule, createApp, main, the commands) sit on top and may import anything.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['config', 'node-version.ts'],
  ['errors', 'observability'],
  ['database', 'http'],
  ['auth', 'rate-limit', 'plants', 'health'],
  ['openapi'],
];

const SRC = __dirname;

/** The top-level folder or file of `src/` a path lies in. */
function partOf(path: string): string {
  return relative(SRC, path).split(sep)[0];
}

function levelOf(part: string): number {
  const level = LAYERS.findIndex((layer) => layer.includes(part) || layer.includes(`${part}.ts`));
  return level === -1 ? LAYERS.length : level;
}

function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

describe('the layers of src/', () => {
  it('has no import that runs back up a layer', () => {
    const upward: string[] = [];
    for (const file of sources(SRC)) {
      const from = partOf(file);
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/(?:from |import\()'(\.[^']+)'/g)) {
        const to = partOf(normalize(join(dirname(file), specifier.replace(/\.js$/, ''))));
        if (levelOf(to) > levelOf(from)) upward.push(`${relative(SRC, file)} imports ${specifier}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('reads the environment only in the configuration schema', () => {
    const readers = sources(SRC)
      .filter((file) => /process\.env\b/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    expect(readers).toEqual(['config/configuration.ts']);
  });
});
