/**
 * `npm run test:failover`: a primary failover, rehearsed. Two servers of Debian's PostgreSQL made
 * here (a primary, and a standby that every commit waits for: synchronous replication), the
 * service through PgBouncer in transaction mode, under load with same-id races; then the primary
 * is killed (`kill -9`), the standby promoted and the pooler pointed at it, as an operator or
 * Patroni would. Every create the service acknowledged is on the new primary; while it moves,
 * creates are answered 503, never 500 and never left unanswered; readiness comes back by itself.
 */
import { jest } from '@jest/globals';
import { pgbouncerPath, startPgBouncer, type PgBouncer } from '../../scripts/pgbouncer.mjs';
import { type Cluster, postgresBin, TestClusters } from '../support/pg-cluster';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { readyAgain } from '../support/probes';
import { sleep } from '../support/sockets';

jest.setTimeout(180_000);

const bin = postgresBin();
const runs = bin !== undefined && pgbouncerPath() !== undefined;

type Answer = number | string;

/** One create; its contract code, or what the transport said when nothing was answered. */
async function create(url: string, token: string, id: number, name: string): Promise<Answer> {
  try {
    const response = await fetch(`${url}/plants`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ id, name }),
      signal: AbortSignal.timeout(35_000),
    });
    return response.status === 200 ? 200 : ((await response.json()) as { error: number }).error;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return `unanswered: ${(error as Error).name} ${cause?.code ?? ''}`;
  }
}

(runs ? describe : describe.skip)('a primary failover through PgBouncer', () => {
  let clusters: TestClusters;
  let primary: Cluster;
  let standby: Cluster;
  let pooler: PgBouncer;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    clusters = new TestClusters(bin!);
    ({ primary, standby } = await clusters.synchronousPair());
    // A sub-second login retry, as the operations guide recommends: PgBouncer's default waits 15 s.
    pooler = await startPgBouncer({ upstream: primary.url(), mode: 'transaction', serverLoginRetry: 1 });
  });

  afterAll(async () => {
    if (server !== undefined) await stopServer(server);
    await pooler?.close();
    clusters?.remove();
  });

  it('loses no acknowledged create, answers 503 while it moves, and is ready again by itself', async () => {
    const url = pooler.url('plants');
    const token = await createToken(url, 'failover');
    server = await startServer({ DATABASE_URL: url });
    const running = server;

    const answers: { id: number; answer: Answer }[] = [];
    let nextId = 1;
    let stop = false;
    // Pairs of clients send the same id at the same moment: one creates it, the other is told it
    // is the same plant (200 both), whichever way the race goes, across the failover too.
    const pair = async (): Promise<void> => {
      while (!stop) {
        const id = nextId++;
        const [a, b] = await Promise.all([
          create(running.url, token, id, `plant ${id}`),
          create(running.url, token, id, `plant ${id}`),
        ]);
        answers.push({ id, answer: a }, { id, answer: b });
        if (a !== 200 || b !== 200) await sleep(50);
      }
    };
    const clients = Array.from({ length: 6 }, pair);

    await sleep(2_000);
    const beforeCrash = answers.filter((entry) => entry.answer === 200).length;
    expect(beforeCrash).toBeGreaterThan(50);
    primary.crash();
    // The clients go on while the primary is gone, until every pair has met the outage.
    const crashed = answers.length;
    const crashedAt = Date.now();
    while (
      answers.slice(crashed).filter((entry) => entry.answer !== 200).length < 12 &&
      Date.now() - crashedAt < 30_000
    ) {
      await sleep(50);
    }
    stop = true;
    await Promise.all(clients);

    // Promoted and repointed while nothing is sent: readiness must come back on its own, as a
    // balancer that took the instance out would see it.
    standby.promote();
    await pooler.repoint('127.0.0.1', standby.port);
    expect(await readyAgain(running.url, 10_000)).toBeLessThan(10_000);
    expect(await create(running.url, token, 1_000_000, 'after')).toBe(200);

    const codes = new Map<Answer, number>();
    for (const { answer } of answers) codes.set(answer, (codes.get(answer) ?? 0) + 1);
    expect([...codes.keys()].filter((answer) => answer !== 200 && answer !== 503)).toEqual([]);
    expect(codes.get(503) ?? 0).toBeGreaterThan(0);

    const stored = new Set(
      (await standby.query<{ id: string }>('SELECT id::text AS id FROM plant', 'plants')).map((row) => Number(row.id)),
    );
    const acknowledged = [...new Set(answers.filter((entry) => entry.answer === 200).map((entry) => entry.id))];
    expect(acknowledged.length).toBeGreaterThanOrEqual(Math.floor(beforeCrash / 2));
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    const log = running.output();
    expect(log).not.toMatch(/"error":500/);
  });
});
