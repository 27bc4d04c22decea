/**
 * `npm run test:failover`: an automatic failover, rehearsed with the files docs/operations.md
 * shows (deploy/patroni/): etcd, three PostgreSQL nodes under Patroni in synchronous mode,
 * HAProxy on Patroni's `/primary`, PgBouncer in transaction mode in front, and the service under
 * load with same-id races. One fault at a time: the leader killed, the synchronous standby
 * frozen, a switchover, etcd silent (the leader frozen is written but not run: see it). Every create the service acknowledged
 * is on the final primary; every other answer is 503, each within the documented bound; the
 * service is ready again by itself after each.
 */
import { jest } from '@jest/globals';
import { pgbouncerPath, startPgBouncer, type PgBouncer } from '../../scripts/pgbouncer.mjs';
import { PatroniFleet, patroniInstalled } from '../support/patroni';
import { postgresBin } from '../support/pg-cluster';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { readyAgain } from '../support/probes';
import { sleep } from '../support/sockets';

jest.setTimeout(600_000);

const bin = postgresBin();
const runs = patroniInstalled(bin) && pgbouncerPath() !== undefined;
/**
 * What docs/operations.md promises: every create is answered, 200 or 503, within the service's
 * own bound on waiting for the store (a connection, then the statement and its commit).
 */
const ANSWER_BOUND_MS = 7_000;

type Answer = number | string;
interface Sent {
  id: number;
  answer: Answer;
  ms: number;
}

/** One create; its contract code, or what the transport said when nothing was answered. */
async function create(url: string, token: string, id: number): Promise<Sent> {
  const began = Date.now();
  try {
    const response = await fetch(`${url}/plants`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ id, name: `plant ${id}` }),
      signal: AbortSignal.timeout(60_000),
    });
    const answer = response.status === 200 ? 200 : ((await response.json()) as { error: number }).error;
    return { id, answer, ms: Date.now() - began };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return { id, answer: `unanswered: ${(error as Error).name} ${cause?.code ?? ''}`, ms: Date.now() - began };
  }
}

(runs ? describe : describe.skip)('an automatic failover on Patroni', () => {
  let fleet: PatroniFleet;
  let pooler: PgBouncer;
  let server: ServerProcess | undefined;
  const sent: Sent[] = [];
  let nextId = 1;
  let token: string;

  beforeAll(async () => {
    fleet = new PatroniFleet(bin!);
    await fleet.start();
    pooler = await startPgBouncer({ upstream: fleet.url('plants'), mode: 'transaction', serverLoginRetry: 1 });
    token = await createToken(pooler.url('plants'), 'failover');
    server = await startServer({ DATABASE_URL: pooler.url('plants') });
  });

  afterAll(async () => {
    if (server !== undefined) await stopServer(server);
    await pooler?.close();
    fleet?.stop();
  });

  /**
   * Pairs of clients send the same id at the same moment (one creates it, the other is told it
   * is the same plant: 200 both) while `fault` runs; then the service must be ready again by
   * itself and take a create.
   */
  async function underLoad(fault: () => Promise<void>): Promise<Sent[]> {
    const url = server!.url;
    const from = sent.length;
    let stop = false;
    const pair = async (): Promise<void> => {
      while (!stop) {
        const id = nextId++;
        const both = await Promise.all([create(url, token, id), create(url, token, id)]);
        sent.push(...both);
        if (both.some(({ answer }) => answer !== 200)) await sleep(100);
      }
    };
    const clients = Array.from({ length: 6 }, pair);
    await sleep(1_000);
    await fault();
    stop = true;
    await Promise.all(clients);
    await readyAgain(url, 30_000);
    const after = await create(url, token, nextId++);
    sent.push(after);
    expect(after.answer).toBe(200);
    return sent.slice(from);
  }

  /** Waits until writes go through the fleet again: a leader with a synchronous standby. */
  async function settled(): Promise<void> {
    await fleet.until(
      async () => (await fleet.leader()) !== undefined && (await fleet.syncStandby()) !== undefined,
      90_000,
      'leader and synchronous standby',
    );
  }

  it('the leader killed: a standby takes over within the ttl, the old leader rejoins', async () => {
    const leader = (await fleet.leader())!;
    const answers = await underLoad(async () => {
      fleet.kill(leader);
      await fleet.until(async () => ![undefined, leader].includes(await fleet.leader()), 60_000, 'a new leader');
      await sleep(2_000);
    });
    expect(answers.filter(({ answer }) => answer === 503).length).toBeGreaterThan(0);
    fleet.restart(leader);
    await fleet.until(() => fleet.allServing(), 90_000, 'the old leader back');
    await settled();
  });

  // Not run: Debian's Patroni 3.0.2 leaves the new leader, about one run in three, writing the
  // synchronous standby's key from a stale etcd3 cache ("Synchronous replication key updated by
  // someone else", every loop), so the fleet never shows a synchronous standby again and could
  // not fail over next. Patroni fixed it upstream after 3.0.2 (its cache invalidated when such a
  // write fails). Run it again with a Patroni that has the fix.
  it.skip('the leader frozen past its ttl: a standby takes over, and the old one, thawed, steps down', async () => {
    const leader = (await fleet.leader())!;
    await underLoad(async () => {
      fleet.freeze(leader, 'STOP');
      await fleet.until(async () => ![undefined, leader].includes(await fleet.leader()), 60_000, 'a new leader');
      await sleep(2_000);
      fleet.freeze(leader, 'CONT');
    });
    await fleet.until(() => fleet.allServing(), 90_000, 'the old leader back as a standby');
    await settled();
  });

  it('the synchronous standby frozen: creates are refused within the bound until Patroni names another', async () => {
    const standby = (await fleet.syncStandby())!;
    const answers = await underLoad(async () => {
      fleet.freeze(standby, 'STOP');
      await fleet.until(
        async () => ![undefined, standby].includes(await fleet.syncStandby()),
        60_000,
        'another synchronous standby',
      );
      await sleep(2_000);
      fleet.freeze(standby, 'CONT');
    });
    expect(answers.filter(({ answer }) => answer === 503).length).toBeGreaterThan(0);
    // The commits given up meanwhile were released by the new synchronous standby's answer, with
    // the server connections they held.
    await fleet.until(
      async () => (await fleet.query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep'")).length === 0,
      10_000,
      'no commit waiting for a standby',
    );
    await settled();
  });

  it('a switchover: the leader hands over to a standby', async () => {
    const leader = (await fleet.leader())!;
    const candidate = (await fleet.syncStandby())!;
    await underLoad(async () => {
      await fleet.switchover(leader, candidate);
      await fleet.until(async () => (await fleet.leader()) === candidate, 60_000, 'the candidate leading');
      await sleep(2_000);
    });
    await settled();
  });

  it('etcd silent for 15 s: the primary that every member still sees goes on (failsafe_mode)', async () => {
    const leader = await fleet.leader();
    const answers = await underLoad(async () => {
      fleet.freezeEtcd('STOP');
      await sleep(15_000);
      fleet.freezeEtcd('CONT');
    });
    expect(answers.filter(({ answer }) => answer !== 200)).toEqual([]);
    await settled();
    expect(await fleet.leader()).toBe(leader);
  });

  it('lost no acknowledged create, answered only 200 or 503, each within the bound', async () => {
    const codes = new Map<Answer, number>();
    for (const { answer } of sent) codes.set(answer, (codes.get(answer) ?? 0) + 1);
    expect([...codes.keys()].filter((answer) => answer !== 200 && answer !== 503)).toEqual([]);
    expect(sent.filter(({ ms }) => ms > ANSWER_BOUND_MS)).toEqual([]);

    const acknowledged = [...new Set(sent.filter(({ answer }) => answer === 200).map(({ id }) => id))];
    expect(acknowledged.length).toBeGreaterThan(100);
    const stored = new Set(
      (await fleet.query<{ id: string }>('SELECT id::text AS id FROM plant', 'plants')).map((row) => Number(row.id)),
    );
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    const log = server!.output();
    expect(log).not.toMatch(/"error":500/);
    // Each outage logged once each way, and over.
    const started = log.match(/store outage started/g)?.length ?? 0;
    expect(started).toBeGreaterThan(0);
    expect(started).toBeLessThanOrEqual(5);
    expect(log.match(/store outage ended/g)?.length).toBe(started);
  });
});
