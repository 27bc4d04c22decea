/**
 * What PostgreSQL spends during a measured run, for `npm run bench`: the CPU time of the backends
 * serving one database, of every process of the server, and the WAL written.
 *
 * CPU time is utime + stime of /proc/PID/stat, so it needs the server on this machine and its
 * processes readable (root, or the postgres user); elsewhere it is not measured. Backends are
 * the pids pg_stat_activity shows for the database, looked up every 250 ms (a pool may open one
 * during the run); the server's processes are the postmaster's children (background writer,
 * WAL writer, checkpointer, autovacuum and every backend). Each process counts from its time at
 * the start (0 for one started since) to the last time it was seen. WAL is pg_current_wal_lsn()
 * at the start and at the end: the whole server's, as are the server's processes, so anything
 * else running on that server counts too.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

export interface PostgresCost {
  /** CPU time of the database's backends, in ms. */
  backendCpuMs: number;
  /** CPU time of every process of the server, in ms. */
  serverCpuMs: number;
  walBytes: number;
  /** How many backends served the database during the run. */
  backends: number;
}

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** utime + stime of a process, and its parent; undefined once it is gone. */
function stat(pid: number): { ticks: number; parent: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // After "pid (comm) ": state, ppid, ... utime is the 14th field, stime the 15th.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ticks: Number(fields[11]) + Number(fields[12]), parent: Number(fields[1]) };
  } catch {
    return undefined;
  }
}

/** CPU time (utime + stime) of a process so far, in ms; 0 once it is gone. */
export function processCpuMs(pid: number): number {
  return ((stat(pid)?.ticks ?? 0) * 1000) / TICKS_PER_SECOND;
}

function childrenOf(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if (stat(Number(entry))?.parent === parent) pids.push(Number(entry));
  }
  return pids;
}

/** Per process: its ticks when first seen (0 if it started after the first look) and when last seen. */
class Ticks {
  private readonly first = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private started = false;

  see(pids: Iterable<number>): void {
    for (const pid of pids) {
      const now = stat(pid)?.ticks;
      if (now === undefined) continue;
      if (!this.first.has(pid)) this.first.set(pid, this.started ? 0 : now);
      this.last.set(pid, now);
    }
    this.started = true;
  }

  get count(): number {
    return this.last.size;
  }

  ms(): number {
    let ticks = 0;
    for (const [pid, last] of this.last) ticks += last - this.first.get(pid)!;
    return (ticks * 1000) / TICKS_PER_SECOND;
  }
}

export class PostgresMeter {
  private readonly backends = new Ticks();
  private readonly server = new Ticks();
  private sampler: NodeJS.Timeout | undefined;
  private sampling: Promise<void> = Promise.resolve();

  private constructor(
    private readonly client: pg.Client,
    private readonly database: string,
    private readonly postmaster: number,
    private readonly walBefore: string,
  ) {}

  /** Starts counting for `database`; undefined where the server's processes cannot be read. */
  static async start(adminUrl: string, database: string): Promise<PostgresMeter | undefined> {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ pid: number; lsn: string }>(
        'SELECT pg_backend_pid() AS pid, pg_current_wal_lsn()::text AS lsn',
      );
      const postmaster = stat(rows[0].pid)?.parent;
      if (postmaster === undefined) {
        await client.end();
        return undefined;
      }
      const meter = new PostgresMeter(client, database, postmaster, rows[0].lsn);
      await meter.sample();
      meter.sampler = setInterval(() => {
        meter.sampling = meter.sampling.then(() => meter.sample()).catch(() => undefined);
      }, 250);
      return meter;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  private async sample(): Promise<void> {
    const { rows } = await this.client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [
      this.database,
    ]);
    this.backends.see(rows.map((row) => row.pid));
    this.server.see([this.postmaster, ...childrenOf(this.postmaster)]);
  }

  async stop(): Promise<PostgresCost> {
    clearInterval(this.sampler);
    try {
      await this.sampling;
      await this.sample();
      const { rows } = await this.client.query<{ bytes: string }>(
        'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS bytes',
        [this.walBefore],
      );
      return {
        backendCpuMs: this.backends.ms(),
        serverCpuMs: this.server.ms(),
        walBytes: Number(rows[0].bytes),
        backends: this.backends.count,
      };
    } finally {
      await this.client.end();
    }
  }

  /** Stops without figures (the run failed). */
  async abandon(): Promise<void> {
    clearInterval(this.sampler);
    await this.sampling;
    await this.client.end().catch(() => undefined);
  }
}
