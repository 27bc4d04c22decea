// A PgBouncer of the tests' and the bench's own, in front of a PostgreSQL server: Debian's
// `pgbouncer` package, on a free port of 127.0.0.1, with trust auth and every database name
// passed through. It refuses to run as root, so as root it runs as the `postgres` user.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.mjs';

/** Where Debian installs it; undefined when it is not installed. */
export function pgbouncerPath() {
  const found = spawnSync('sh', ['-c', 'command -v pgbouncer || ls /usr/sbin/pgbouncer'], { encoding: 'utf8' });
  const path = found.stdout.trim().split('\n')[0];
  return found.status === 0 && path !== '' ? path : undefined;
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts PgBouncer in `mode` (transaction or session) in front of `upstream` (a postgres:// URL
 * of the server; its user is the one clients connect as, and may use the admin console; its
 * password, if any, is the one PgBouncer logs in with).
 * Resolves once it accepts connections. `serverLoginRetry` is its `server_login_retry` in
 * seconds (PgBouncer's default: 15).
 */
export async function startPgBouncer({ upstream, mode = 'transaction', poolSize = 20, serverLoginRetry = 15 }) {
  const binary = pgbouncerPath();
  if (binary === undefined) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const server = new URL(upstream);
  const user = decodeURIComponent(server.username || 'postgres');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-pgbouncer-'));
  chmodSync(dir, 0o777); // the postgres user writes its log here
  // Clients are trusted; the password, if the server asks for one, is what PgBouncer logs in with.
  const password = decodeURIComponent(server.password);
  writeFileSync(join(dir, 'users.txt'), `"${user}" "${password}"\n`, { mode: 0o644 });
  const config = (serverHost, serverPort) =>
    [
      '[databases]',
      `* = host=${serverHost} port=${serverPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `pool_mode = ${mode}`,
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 1000',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `admin_users = ${user}`,
      `server_login_retry = ${serverLoginRetry}`,
      '',
    ].join('\n');
  writeFileSync(join(dir, 'pgbouncer.ini'), config(server.hostname, server.port || 5432), { mode: 0o644 });
  /** Runs one command on PgBouncer's admin console (PAUSE, RESUME, RELOAD, SHOW ...). */
  const admin = async (command) => {
    const client = new pg.Client({ host: '127.0.0.1', port, user, database: 'pgbouncer' });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query(command)).rows;
    } finally {
      await client.end();
    }
  };
  const asRoot = process.getuid?.() === 0 ? ['-u', 'postgres'] : [];
  let child;
  const start = async () => {
    child = spawn(binary, [...asRoot, join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    for (let i = 0; i < 100; i++) {
      if (await accepts(port)) return;
      if (child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill('SIGKILL');
    await exited;
    throw new Error(`pgbouncer did not start on port ${port}; see ${join(dir, 'pgbouncer.log')}`);
  };
  const stop = async () => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT'); // PgBouncer's immediate shutdown: every connection closed at once
    await exited;
  };
  await start();
  return {
    port,
    /** `upstream` with PgBouncer's address instead of the server's. */
    url(database = server.pathname.slice(1)) {
      const url = new URL(upstream);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      url.pathname = `/${database}`;
      return url.toString();
    },
    stop,
    /** Starts it again on the same port after stop(). */
    start,
    admin,
    /** Points every database at another server (a failover's new primary), as an operator would. */
    async repoint(host, serverPort) {
      writeFileSync(join(dir, 'pgbouncer.ini'), config(host, serverPort), { mode: 0o644 });
      await admin('RELOAD');
    },
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
