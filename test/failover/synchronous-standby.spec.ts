/**
 * A synchronous standby that stops answering (frozen, as a stalled VM or a full disk leaves it):
 * every commit on the primary waits for it. The service, directly or through PgBouncer in
 * transaction mode, answers creates 503 within its commit bound, is unready from the first probe
 * that finds commits waiting until they complete again, logs one outage each way, and is ready
 * again by itself once the standby answers.
 */
import { jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { pgbouncerPath, startPgBouncer, type PgBouncer } from '../../scripts/pgbouncer.mjs';
import { type Cluster, postgresBin, TestClusters } from '../support/pg-cluster';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { readyAgain } from '../support/probes';
import { sleep } from '../support/sockets';

jest.setTimeout(180_000);

const bin = postgresBin();
const runs = bin !== undefined && pgbouncerPath() !== undefined;

/** Stops (`STOP`) or resumes (`CONT`) every process of `cluster`. */
function freeze(cluster: Cluster, signal: 'STOP' | 'CONT'): void {
  const postmaster = String(cluster.pid());
  const children = execFileSync('pgrep', ['-P', postmaster], { encoding: 'utf8' }).trim().split('\n');
  for (const pid of [postmaster, ...children]) process.kill(Number(pid), `SIG${signal}`);
}

(runs ? describe : describe.skip).each(['directly', 'through PgBouncer'])(
  'a synchronous standby that stops answering, %s',
  (path) => {
    let clusters: TestClusters;
    let primary: Cluster;
    let standby: Cluster;
    let pooler: PgBouncer;
    let server: ServerProcess | undefined;
    let frozen = false;

    beforeAll(async () => {
      clusters = new TestClusters(bin!);
      ({ primary, standby } = await clusters.synchronousPair());
      pooler = await startPgBouncer({ upstream: primary.url(), mode: 'transaction', serverLoginRetry: 1 });
    });

    afterAll(async () => {
      if (frozen) freeze(standby, 'CONT');
      if (server !== undefined) await stopServer(server);
      await pooler?.close();
      clusters?.remove();
    });

    it('answers creates 503 within the commit bound, is unready until commits complete, one outage each way, ready again by itself', async () => {
      const url = path === 'directly' ? primary.url('plants') : pooler.url('plants');
      const token = await createToken(url, 'synchronous');
      server = await startServer({ DATABASE_URL: url });
      const running = server;
      const create = async (id: number): Promise<{ answer: number; ms: number }> => {
        const began = Date.now();
        const response = await fetch(`${running.url}/plants`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ id, name: 'synchronous' }),
        });
        const answer = response.status === 200 ? 200 : ((await response.json()) as { error: number }).error;
        return { answer, ms: Date.now() - began };
      };
      const ready = async (): Promise<number> => (await fetch(`${running.url}/health/ready`)).status;
      const lines = (what: 'started' | 'ended'): number =>
        running
          .output()
          .split('\n')
          .filter((line) => line.includes(`store outage ${what}`)).length;

      expect((await create(1)).answer).toBe(200);
      expect(await ready()).toBe(200);

      freeze(standby, 'STOP');
      frozen = true;
      // The first probe after the freeze finds its own commit waiting, and says so.
      expect(await ready()).toBe(503);
      // One after another, so that the commits in flight fill and the rest queue behind them.
      const creates = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          await sleep(i * 20);
          return create(100 + i);
        }),
      );
      expect(creates.map(({ answer }) => answer)).toEqual(Array.from({ length: 20 }, () => 503));
      // Within the commit bound (3 s): a create queued behind a commit that was given up is answered
      // with it, not after a commit bound of its own.
      expect(Math.max(...creates.map(({ ms }) => ms))).toBeLessThan(15_000); // bounded: far from the jest timeout, not tight
      // Unready while commits cannot complete: no probe says otherwise.
      for (let i = 0; i < 5; i++) {
        expect(await ready()).toBe(503);
        await sleep(500);
      }
      expect(lines('started')).toBe(1);
      expect(lines('ended')).toBe(0);

      freeze(standby, 'CONT');
      frozen = false;
      await readyAgain(running.url, 10_000);
      expect((await create(2)).answer).toBe(200);
      expect(lines('started')).toBe(1);
      expect(lines('ended')).toBe(1);
    });
  },
);
