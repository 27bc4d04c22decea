import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Process-level tests run the built server (`node dist/main.js`) the way production does, so
 * a run of a project that does compiles it first, once: incrementally, so that a run after a
 * small change recompiles only what changed. The in-process projects need no build.
 */
export default function buildOnce() {
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
