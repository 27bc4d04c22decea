/**
 * A Patroni fleet of a test's own, from the files `docs/operations.md` shows (deploy/patroni/):
 * one etcd 3.4, three PostgreSQL nodes under Patroni 3.0 in synchronous mode, HAProxy on
 * Patroni's `/primary`, all from Debian's packages on free ports of 127.0.0.1. The documented
 * addresses (10.0.0.x) are the only thing rewritten.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { postgresUser, queryOnce } from './pg-cluster';
import {
  chmodSync,
  closeSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, sleep } from './sockets';

const DEPLOY = join(process.cwd(), 'deploy/patroni');
const PASSWORD = 'plant-store-test';

/** Whether this machine has what the fleet needs: etcd, patroni, haproxy and PostgreSQL 15. */
export function patroniInstalled(binDir: string | undefined): boolean {
  return binDir !== undefined && onPath('etcd') && onPath('patroni') && onPath('haproxy');
}

/** Whether the shell finds `command`. */
export function onPath(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
}

/** A node's role, as Patroni's `/cluster` says it. */
export type Role = 'leader' | 'sync_standby' | 'replica';

interface Member {
  name: string;
  role: Role;
  state: string;
}

export interface PatroniNode {
  name: string;
  postgresPort: number;
  restPort: number;
  dataDir: string;
}

/** The `KEY=value` lines of an env file. */
function envFile(text: string): Record<string, string> {
  const entries = text
    .split('\n')
    .filter((line) => /^[A-Z0-9_]+=/.test(line))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]);
  return Object.fromEntries(entries) as Record<string, string>;
}

export class PatroniFleet {
  readonly nodes: PatroniNode[] = [];
  haproxyPort = 0;
  private readonly root: string;
  private readonly processes = new Map<string, ChildProcess>();
  private readonly owner = userInfo().uid === 0 ? postgresUser() : undefined;
  private etcdPort = 0;

  constructor(private readonly binDir: string) {
    this.root = mkdtempSync(join(tmpdir(), 'plant-store-patroni-'));
    chmodSync(this.root, 0o755);
  }

  /** The superuser's URL through HAProxy (the primary, whichever node it is). */
  url(database = 'postgres'): string {
    return `postgres://postgres:${PASSWORD}@127.0.0.1:${this.haproxyPort}/${database}`;
  }

  /** Starts etcd, three nodes and HAProxy; resolves once a leader and a synchronous standby serve. */
  async start(): Promise<void> {
    await this.startEtcd();
    for (const name of ['pg1', 'pg2', 'pg3']) {
      this.nodes.push({
        name,
        postgresPort: await freePort(),
        restPort: await freePort(),
        dataDir: join(this.root, name, 'data'),
      });
    }
    this.writePatroniConfig();
    // The first node bootstraps alone, so that the others copy it rather than race it.
    this.startNode('pg1');
    await this.until(
      async () => (await this.members()).some((m) => m.role === 'leader' && m.state === 'running'),
      60_000,
      'a leader',
    );
    this.startNode('pg2');
    this.startNode('pg3');
    await this.startHaproxy();
    await this.until(() => this.allServing(), 90_000, 'three members running');
    await this.until(
      async () => (await this.members()).some((m) => m.role === 'sync_standby'),
      30_000,
      'a synchronous standby',
    );
    await this.query("CREATE DATABASE plants ENCODING 'UTF8' TEMPLATE template0");
  }

  /** Every member, from whichever node's REST API answers. */
  async members(): Promise<Member[]> {
    for (const node of this.nodes) {
      try {
        const response = await fetch(`http://127.0.0.1:${node.restPort}/cluster`, {
          signal: AbortSignal.timeout(1_000),
        });
        const body = (await response.json()) as { members: Member[] };
        return body.members;
      } catch {
        // that node does not answer; ask another
      }
    }
    return [];
  }

  /** Every node runs: the leader, and each standby streaming from it. */
  async allServing(): Promise<boolean> {
    const serving = (await this.members()).filter((m) => m.state === 'streaming' || m.state === 'running');
    return serving.length === this.nodes.length;
  }

  async leader(): Promise<string | undefined> {
    return (await this.members()).find((m) => m.role === 'leader' && m.state === 'running')?.name;
  }

  async syncStandby(): Promise<string | undefined> {
    return (await this.members()).find((m) => m.role === 'sync_standby')?.name;
  }

  /** Waits until `condition` holds, at most `withinMs`; how long it took. */
  async until(condition: () => Promise<boolean>, withinMs: number, what: string): Promise<number> {
    const started = Date.now();
    while (Date.now() - started < withinMs) {
      if (await condition().catch(() => false)) return Date.now() - started;
      await sleep(200);
    }
    // The folder, logs included, is gone once the fleet stops: what it said goes with the error.
    const logged = this.nodes.filter((node) => existsSync(join(this.root, `${node.name}.log`)));
    const tails = logged.map((node) => {
      const lines = readFileSync(join(this.root, `${node.name}.log`), 'utf8')
        .trimEnd()
        .split('\n');
      return `${node.name}.log, last lines:\n${lines.slice(-15).join('\n')}`;
    });
    throw new Error(
      `no ${what} within ${withinMs} ms; members: ${JSON.stringify(await this.members())}\n${tails.join('\n')}`,
    );
  }

  /** `kill -9` of a node's Patroni and PostgreSQL: a machine that is gone. */
  kill(name: string): void {
    for (const pid of this.pids(name)) process.kill(pid, 'SIGKILL');
    this.processes.delete(name);
  }

  /** Stops (`STOP`) or resumes (`CONT`) a node's Patroni and PostgreSQL: a stalled machine. */
  freeze(name: string, signal: 'STOP' | 'CONT'): void {
    for (const pid of this.pids(name)) process.kill(pid, `SIG${signal}`);
  }

  /** Stops (`STOP`) or resumes (`CONT`) etcd: the leader's election store gone silent. */
  freezeEtcd(signal: 'STOP' | 'CONT'): void {
    const pid = this.processes.get('etcd')?.pid;
    if (pid !== undefined) process.kill(pid, `SIG${signal}`);
  }

  /** Starts a node's Patroni again (after `kill`): it rejoins as a standby, rewound if need be. */
  restart(name: string): void {
    this.startNode(name);
  }

  /** A planned switchover to `candidate`, through the leader's REST API, as `patronictl switchover` does. */
  async switchover(leader: string, candidate: string): Promise<void> {
    const node = this.node(leader);
    const response = await fetch(`http://127.0.0.1:${node.restPort}/switchover`, {
      method: 'POST',
      headers: {
        Authorization: `Basic ${Buffer.from(`patroni:${PASSWORD}`).toString('base64')}`,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ leader, candidate }),
    });
    if (response.status !== 200) throw new Error(`switchover refused: ${response.status} ${await response.text()}`);
  }

  /** `sql` on the primary, through HAProxy. */
  query<R extends pg.QueryResultRow>(sql: string, database = 'postgres'): Promise<R[]> {
    return queryOnce<R>(
      { host: '127.0.0.1', port: this.haproxyPort, user: 'postgres', password: PASSWORD, database },
      sql,
    );
  }

  node(name: string): PatroniNode {
    const node = this.nodes.find((n) => n.name === name);
    if (node === undefined) throw new Error(`no node ${name}`);
    return node;
  }

  /** Stops everything and deletes the folder. */
  stop(): void {
    for (const node of this.nodes) {
      try {
        this.freeze(node.name, 'CONT');
        this.kill(node.name);
      } catch {
        // already gone
      }
    }
    this.freezeEtcd('CONT');
    for (const child of this.processes.values()) child.kill('SIGKILL');
    rmSync(this.root, { recursive: true, force: true });
  }

  private pids(name: string): number[] {
    const pids: number[] = [];
    const patroni = this.processes.get(name)?.pid;
    if (patroni !== undefined) pids.push(patroni);
    const pidFile = join(this.node(name).dataDir, 'postmaster.pid');
    if (existsSync(pidFile)) {
      const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n');
      pids.push(postmaster, ...children.filter((pid) => pid !== '').map(Number));
    }
    return pids.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
  }

  private spawnLogged(
    name: string,
    command: string,
    args: string[],
    env: Record<string, string>,
    asPostgres: boolean,
  ): ChildProcess {
    const log = openSync(join(this.root, `${name}.log`), 'a');
    const child = spawn(command, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['ignore', log, log],
      ...(asPostgres && this.owner !== undefined ? this.owner : {}),
    });
    // The child has its own copy.
    closeSync(log);
    this.processes.set(name, child);
    return child;
  }

  private async startEtcd(): Promise<void> {
    this.etcdPort = await freePort();
    const peer = await freePort();
    this.spawnLogged(
      'etcd',
      'etcd',
      [
        '--name=etcd1',
        `--data-dir=${join(this.root, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${this.etcdPort}`,
        `--advertise-client-urls=http://127.0.0.1:${this.etcdPort}`,
        `--listen-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-cluster=etcd1=http://127.0.0.1:${peer}`,
      ],
      {},
      false,
    );
    await this.until(async () => (await fetch(`http://127.0.0.1:${this.etcdPort}/health`)).ok, 20_000, 'etcd');
  }

  /** deploy/patroni/patroni.yml with this machine's addresses and binaries. */
  private writePatroniConfig(): void {
    const config = readFileSync(join(DEPLOY, 'patroni.yml'), 'utf8')
      .replaceAll('10.0.0.0/24', '127.0.0.1/32')
      .replace(/bin_dir: .*/, `bin_dir: ${this.binDir}`);
    writeFileSync(join(this.root, 'patroni.yml'), config, { mode: 0o644 });
  }

  private startNode(name: string): void {
    const node = this.node(name);
    const dir = join(this.root, name);
    if (!existsSync(dir)) {
      mkdirSync(dir, { mode: 0o700 });
      if (this.owner !== undefined) chownSync(dir, this.owner.uid, this.owner.gid);
    }
    // deploy/patroni/node.env, for this node.
    const documented = envFile(readFileSync(join(DEPLOY, 'node.env'), 'utf8'));
    const mine: Record<string, string> = {
      PATRONI_NAME: name,
      PATRONI_RESTAPI_LISTEN: `127.0.0.1:${node.restPort}`,
      PATRONI_RESTAPI_CONNECT_ADDRESS: `127.0.0.1:${node.restPort}`,
      PATRONI_RESTAPI_PASSWORD: PASSWORD,
      PATRONI_POSTGRESQL_LISTEN: `127.0.0.1:${node.postgresPort}`,
      PATRONI_POSTGRESQL_CONNECT_ADDRESS: `127.0.0.1:${node.postgresPort}`,
      PATRONI_POSTGRESQL_DATA_DIR: node.dataDir,
      PATRONI_POSTGRESQL_PGPASS: join(dir, 'pgpass'),
      PATRONI_ETCD3_HOSTS: `127.0.0.1:${this.etcdPort}`,
      PATRONI_SUPERUSER_PASSWORD: PASSWORD,
      PATRONI_REPLICATION_PASSWORD: PASSWORD,
      PATRONI_REWIND_PASSWORD: PASSWORD,
    };
    const undocumented = Object.keys(mine).filter((key) => !(key in documented));
    if (undocumented.length > 0) throw new Error(`deploy/patroni/node.env does not set ${undocumented.join(', ')}`);
    this.spawnLogged(name, 'patroni', [join(this.root, 'patroni.yml')], { ...documented, ...mine }, true);
  }

  /** deploy/patroni/haproxy.cfg with this machine's addresses. */
  private async startHaproxy(): Promise<void> {
    this.haproxyPort = await freePort();
    let config = readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8').replace(
      /bind \S+/,
      `bind 127.0.0.1:${this.haproxyPort}`,
    );
    this.nodes.forEach((node, i) => {
      config = config.replace(
        new RegExp(`server pg${i + 1} \\S+ check port \\d+`),
        `server ${node.name} 127.0.0.1:${node.postgresPort} check port ${node.restPort}`,
      );
    });
    const file = join(this.root, 'haproxy.cfg');
    writeFileSync(file, config);
    execFileSync('haproxy', ['-c', '-q', '-f', file]);
    this.spawnLogged('haproxy', 'haproxy', ['-db', '-f', file], {}, false);
    await this.until(async () => (await this.query('SELECT 1')).length === 1, 30_000, 'HAProxy reaching the leader');
  }
}
