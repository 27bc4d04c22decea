import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Process-level tests run the built server (`node dist/main.js`) the way production does, so
 * every test run compiles it first, once for all projects: incrementally, so that a run after
 * a small change recompiles only what changed.
 */
export default async function globalSetup() {
  execFileSync(
    process.execPath,
    [
      'node_modules/typescript/bin/tsc',
      '-p',
      'tsconfig.build.json',
      '--incremental',
      '--tsBuildInfoFile',
      'dist/.tsbuildinfo',
    ],
    { stdio: 'inherit' },
  );
  pruneOrphans('dist', 'src');
  execFileSync(process.execPath, ['scripts/build-info.mjs'], { stdio: 'inherit' });
  await refuseForgottenMigration();
}

/**
 * An entity changed without its migration would fail nearly every test, each its own way: the
 * run stops here instead, before any test, with one line that names the command.
 */
async function refuseForgottenMigration() {
  const { openStore } = await import('./dist/database/open-store.js');
  const { ENTITIES } = await import('./dist/entities.js');
  const dataSource = await openStore({ type: 'sqlite', path: ':memory:' }, ENTITIES);
  try {
    const pending = (await dataSource.driver.createSchemaBuilder().log()).upQueries.map((query) => query.query);
    if (pending.length === 0) return;
    const error = new Error(
      `the entities need SQL that no migration has (${pending.join('; ')}): ` +
        'run npm run migration:generate -- ExpandName (docs/architecture.md, "Adding a field")',
    );
    error.stack = error.message; // the line is the whole story
    throw error;
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Removes what was compiled from a source that is gone (a branch switched, a file deleted): the
 * incremental build leaves it, and a store runs every migration file of its folder.
 */
function pruneOrphans(built, source) {
  for (const entry of readdirSync(built, { withFileTypes: true })) {
    const path = join(built, entry.name);
    if (entry.isDirectory()) {
      pruneOrphans(path, join(source, entry.name));
      continue;
    }
    const compiled = /^(.*)\.(js|mjs)(\.map)?$/.exec(entry.name);
    if (compiled === null) continue;
    const [, stem, extension] = compiled;
    if (!existsSync(join(source, `${stem}.${extension === 'mjs' ? 'mts' : 'ts'}`))) rmSync(path);
  }
}
