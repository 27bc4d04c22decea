// `npm run test:postgres`: the e2e suite and the multi-process races on PostgreSQL.
// DATABASE_URL names the server (default: this machine's, user postgres, trust auth); every
// test app makes a fresh database on it and drops it afterwards.
import { spawnSync } from 'node:child_process';

const server = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
if (!/^postgres(ql)?:\/\//.test(server)) {
  console.error(`test:postgres needs a postgres:// DATABASE_URL, got "${server}"`);
  process.exit(2);
}
const result = spawnSync(
  process.execPath,
  [
    '--experimental-vm-modules',
    'node_modules/jest/bin/jest.js',
    '--selectProjects',
    'e2e',
    'process',
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit', env: { ...process.env, TEST_DATABASE_URL: server } },
);
process.exit(result.status ?? 1);
