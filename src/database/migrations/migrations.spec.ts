import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS as POSTGRES } from './postgres';
import { MIGRATIONS as SQLITE } from './sqlite';

/** The migration classes the files of a kind's folder export, in file order. */
function exported(kind: string): string[] {
  const folder = join(__dirname, kind);
  return readdirSync(folder)
    .filter((file) => /^\d+-\w+\.ts$/.test(file))
    .sort()
    .map((file) => /export class (\w+)/.exec(readFileSync(join(folder, file), 'utf8'))?.[1] ?? file);
}

describe('the migrations each store runs', () => {
  it.each([
    ['sqlite', SQLITE],
    ['postgres', POSTGRES],
  ] as const)('%s: every file of its folder, in order (node scripts/migration-index.mjs lists them)', (kind, list) => {
    expect(list.map((migration) => migration.name)).toEqual(exported(kind));
  });

  it('are one schema version in two dialects: the same names, in the same order', () => {
    const names = (list: typeof SQLITE): string[] => list.map((migration) => new migration().name ?? '');
    expect(names(SQLITE)).toEqual(names(POSTGRES));
  });
});
