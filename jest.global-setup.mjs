import { execFileSync } from 'node:child_process';

/**
 * Process-level tests run the built server (`node dist/main.js`) the way production does, so
 * every test run compiles it first (about three seconds).
 */
export default function globalSetup() {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    stdio: 'inherit',
  });
}
