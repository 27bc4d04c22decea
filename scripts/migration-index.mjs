// Writes src/database/migrations/<kind>/index.ts: every migration of the folder, in file order,
// as the store runs them. `npm run migration:generate` calls it after writing a migration;
// after writing one by hand, run `node scripts/migration-index.mjs` (a test fails until then).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function migrationIndex(folder) {
  const files = readdirSync(folder)
    .filter((file) => /^\d+-\w+\.ts$/.test(file))
    .sort();
  const classes = files.map((file) => {
    const found = /export class (\w+)/.exec(readFileSync(join(folder, file), 'utf8'));
    if (found === null) throw new Error(`${join(folder, file)} exports no migration class`);
    return { file: file.replace(/\.ts$/, ''), name: found[1] };
  });
  return [
    '// Written by `npm run migration:generate` (scripts/migration-index.mjs): every migration of this folder.',
    "import type { MigrationInterface } from 'typeorm';",
    ...classes.map(({ file, name }) => `import { ${name} } from './${file}';`),
    '',
    `export const MIGRATIONS: readonly (new () => MigrationInterface)[] = [${classes.map(({ name }) => name).join(', ')}];`,
    '',
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const kind of ['sqlite', 'postgres']) {
    const folder = `src/database/migrations/${kind}`;
    writeFileSync(join(folder, 'index.ts'), migrationIndex(folder));
  }
}
