/**
 * @slow 6 s: holds the log backed up while it sends thousands of creates
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';

/**
 * Several times more request lines than stdout can hold unread: a line is ~250 bytes, and the
 * server's stdout here is a real pipe (see startServer), which holds 64 KB.
 */
const CREATES = 1000;
const CONCURRENCY = 16;

/** Creates CREATES plants, CONCURRENCY at a time, each bounded in time; resolves with the statuses. */
async function createMany(server: ServerProcess, token: string, firstId: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < CREATES) {
      const id = firstId + next++;
      const response = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ id, name: `logged ${id}` }),
        signal: AbortSignal.timeout(5_000),
      });
      await response.arrayBuffer();
      statuses.push(response.status);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return statuses;
}

/**
 * The request log goes to stdout, which an operator's pipe, terminal or log collector may read
 * slowly or not at all for a while. That must not hold requests up, and a stop must still write
 * every line once stdout is read again.
 */
describe('the log on stdout', () => {
  let dir: string;
  let databaseUrl: string;
  let token: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-log-'));
    databaseUrl = `sqlite:${join(dir, 'store.sqlite')}`;
    token = await createToken(databaseUrl, 'logging');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('does not hold requests up while nobody reads it', async () => {
    const server = await startServer({ DATABASE_URL: databaseUrl }, undefined, undefined, 'pipe');
    try {
      server.stdout.pause();
      const statuses = await createMany(server, token, 1_000_000);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(statuses).toHaveLength(CREATES);
    } finally {
      server.stdout.resume();
      await stopServer(server);
    }
  });

  it('writes every line whole, the last one last, when it stops with its log backed up', async () => {
    const server = await startServer({ DATABASE_URL: databaseUrl }, undefined, undefined, 'pipe');
    server.stdout.pause();
    await createMany(server, token, 2_000_000);
    server.child.kill('SIGTERM');
    // Still unread while it stops: the last lines queue behind the ones already waiting.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const ended = once(server.stdout, 'end');
    server.stdout.resume();
    expect(await server.exited).toBe(0);
    await ended;

    const lines = server.output().trimEnd().split('\n');
    const entries = lines.map((line) => JSON.parse(line) as { msg?: string; req?: { path?: string } });
    expect(entries.filter((entry) => entry.req?.path === '/plants')).toHaveLength(CREATES);
    expect(entries.at(-1)?.msg).toMatch(/^stopped: drained and closed the store/);
  });

  it('ends at once, however it ends, when nobody reads its log', async () => {
    // Two megabytes of lines, then an exit with them unwritten: what a crash would leave.
    const script = `
      const { createRootLogger } = require(${JSON.stringify(join(process.cwd(), 'dist/observability/logger.js'))});
      const logger = createRootLogger('info', undefined, 'json');
      for (let i = 0; i < 8_000; i++) logger.info({ i, padding: 'x'.repeat(200) }, 'a line nobody reads');
      setImmediate(() => process.exit(3));
    `;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.pause(); // never read
    const exited = once(child, 'exit').then(([code]) => code as number);
    const code = await Promise.race([exited, sleep(10_000, 'still running 10 s after its exit', { ref: false })]);
    child.kill('SIGKILL');
    expect(code).toBe(3);
  });

  it('still exits, soon after its drain, when nobody reads its log again', async () => {
    const server = await startServer({ DATABASE_URL: databaseUrl }, undefined, undefined, 'pipe');
    server.stdout.pause();
    await createMany(server, token, 3_000_000);
    server.child.kill('SIGTERM');
    const code = await Promise.race([server.exited, sleep(30_000, 'still running 30 s after SIGTERM', { ref: false })]);
    server.stdout.resume();
    if (code !== 0) server.child.kill('SIGKILL');
    // Within the drain's own bound, or it would have said exit 1.
    expect(code).toBe(0);
  });
});
