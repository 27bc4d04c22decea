// `npm run test:postgres`: the e2e suite and the multi-process races on PostgreSQL.
// `npm run test:pgbouncer`: the same, with the service (and every test's client) connecting
// through a PgBouncer in transaction mode (Debian's `pgbouncer`, started here on a free port).
// DATABASE_URL names the server (default: this machine's, user postgres, trust auth); every
// test app makes a fresh database on it (directly) and drops it afterwards.
import { spawnSync } from 'node:child_process';
import { startPgBouncer } from './pgbouncer.mjs';

const server = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
if (!/^postgres(ql)?:\/\//.test(server)) {
  console.error(`test:postgres needs a postgres:// DATABASE_URL, got "${server}"`);
  process.exit(2);
}
const args = process.argv.slice(2);
const throughPgBouncer = args.includes('--pgbouncer');
const pooler = throughPgBouncer ? await startPgBouncer({ upstream: server, mode: 'transaction' }) : undefined;
const result = spawnSync(
  process.execPath,
  [
    'node_modules/jest/bin/jest.js',
    '--selectProjects',
    'e2e',
    'process',
    ...args.filter((arg) => arg !== '--pgbouncer'),
  ],
  {
    stdio: 'inherit',
    env: { ...process.env, TEST_DATABASE_URL: server, ...(pooler ? { TEST_POOLER_URL: pooler.url() } : {}) },
  },
);
await pooler?.close();
process.exit(result.status ?? 1);
