import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { freePort } from './sockets';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/** Debian's PostgreSQL binaries (`/usr/lib/postgresql/VERSION/bin`), newest first; undefined without them. */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((version) => existsSync(join(root, version, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length === 0 ? undefined : join(root, versions[0], 'bin');
}

/** PostgreSQL refuses to run as root: as root, its tools run as the `postgres` user. */
const asRoot = userInfo().uid === 0;

export function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }));
  return { uid: id('-u'), gid: id('-g') };
}

/** Runs one of PostgreSQL's tools (as the `postgres` user when this is root). */
function tool(bin: string, name: string, args: string[]): string {
  const command = asRoot ? 'runuser' : join(bin, name);
  const argv = asRoot ? ['-u', 'postgres', '--', join(bin, name), ...args] : args;
  return execFileSync(command, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** One PostgreSQL server of a test's own: a data folder in a temporary folder, on a free port. */
export interface Cluster {
  port: number;
  dir: string;
  /** postgres://postgres@127.0.0.1:PORT/DATABASE */
  url(database?: string): string;
  start(): void;
  /** The postmaster's pid, while it runs. */
  pid(): number;
  /** `kill -9` of the postmaster: what a machine failure looks like to its clients. */
  crash(): void;
  promote(): void;
  stop(): void;
  /** Appends settings to postgresql.conf and reloads them, if it runs. */
  configure(lines: string[]): void;
  query<R extends pg.QueryResultRow>(sql: string, database?: string): Promise<R[]>;
}

/**
 * A primary, and (`standbyOf`) a standby streaming from it: two servers of Debian's PostgreSQL in
 * a temporary folder, each on a free port of 127.0.0.1, trust authentication, no Unix socket
 * outside the folder. `remove()` stops both and deletes the folder.
 */
export class TestClusters {
  private readonly root: string;
  private readonly clusters: Cluster[] = [];

  constructor(private readonly bin: string) {
    this.root = mkdtempSync(join(tmpdir(), 'plant-store-clusters-'));
    chmodSync(this.root, 0o755);
    if (asRoot) {
      const { uid, gid } = postgresUser();
      chownSync(this.root, uid, gid);
    }
  }

  async primary(name: string): Promise<Cluster> {
    const port = await freePort();
    const dir = join(this.root, name);
    tool(this.bin, 'initdb', ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions']);
    const cluster = this.cluster(dir, port);
    cluster.configure([
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${this.root}'`,
      'wal_level = replica',
      'max_wal_senders = 5',
      'fsync = on',
    ]);
    return cluster;
  }

  /** A copy of `primary` taken by pg_basebackup, streaming from it as `name` (its application_name). */
  async standbyOf(primary: Cluster, name: string): Promise<Cluster> {
    const port = await freePort();
    const dir = join(this.root, name);
    tool(this.bin, 'pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      dir,
      '-R',
      '-X',
      'stream',
    ]);
    const cluster = this.cluster(dir, port);
    // pg_basebackup -R wrote primary_conninfo to postgresql.auto.conf, which wins over postgresql.conf.
    appendFileSync(
      join(dir, 'postgresql.auto.conf'),
      `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=${name}'\n`,
    );
    cluster.configure([`port = ${port}`]);
    return cluster;
  }

  /**
   * A primary with a synchronous standby, `standby1`, that every commit waits for, both running,
   * and a UTF-8 database `plants` on the primary. The standby is made before the primary asks for
   * it, so that its copy does not wait for a standby of its own once promoted.
   */
  async synchronousPair(): Promise<{ primary: Cluster; standby: Cluster }> {
    const primary = await this.primary('primary');
    primary.start();
    const standby = await this.standbyOf(primary, 'standby1');
    standby.start();
    primary.configure(["synchronous_standby_names = 'standby1'", 'synchronous_commit = on']);
    const state = async (): Promise<string | undefined> =>
      (await primary.query<{ sync_state: string }>('SELECT sync_state FROM pg_stat_replication'))[0]?.sync_state;
    for (let i = 0; i < 100 && (await state()) !== 'sync'; i++) await sleep(100);
    if ((await state()) !== 'sync') throw new Error('the standby did not become synchronous within 10 s');
    await primary.query("CREATE DATABASE plants ENCODING 'UTF8' TEMPLATE template0");
    return { primary, standby };
  }

  remove(): void {
    for (const cluster of this.clusters) {
      try {
        cluster.stop();
      } catch {
        // already gone
      }
    }
    rmSync(this.root, { recursive: true, force: true });
  }

  private cluster(dir: string, port: number): Cluster {
    const bin = this.bin;
    const log = join(dir, 'server.log');
    const cluster: Cluster = {
      port,
      dir,
      url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
      start: () => void tool(bin, 'pg_ctl', ['-D', dir, '-l', log, '-w', '-t', '30', 'start']),
      pid: () => Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]),
      crash: () => process.kill(cluster.pid(), 'SIGKILL'),
      promote: () => void tool(bin, 'pg_ctl', ['-D', dir, '-w', '-t', '30', 'promote']),
      stop: () => {
        if (existsSync(join(dir, 'postmaster.pid'))) tool(bin, 'pg_ctl', ['-D', dir, '-m', 'immediate', '-w', 'stop']);
      },
      configure: (lines) => {
        appendFileSync(join(dir, 'postgresql.conf'), `\n${lines.join('\n')}\n`);
        if (existsSync(join(dir, 'postmaster.pid'))) tool(bin, 'pg_ctl', ['-D', dir, 'reload']);
      },
      query: <R extends pg.QueryResultRow>(sql: string, database = 'postgres'): Promise<R[]> =>
        queryOnce<R>({ connectionString: cluster.url(database) }, sql),
    };
    this.clusters.push(cluster);
    return cluster;
  }
}

/** `sql` on a connection of its own, closed afterwards. */
export async function queryOnce<R extends pg.QueryResultRow>(config: pg.ClientConfig, sql: string): Promise<R[]> {
  const client = new pg.Client(config);
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}
