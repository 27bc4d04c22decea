import { execFileSync } from 'node:child_process';

/**
 * Process-level tests run the built server (`node dist/main.js`) the way production does, so
 * every test run compiles it first, once for all projects: incrementally, so that a run after
 * a small change recompiles only what changed.
 */
export default function globalSetup() {
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
  execFileSync(process.execPath, ['scripts/build-info.mjs'], { stdio: 'inherit' });
}
