/**
 * @slow 8 s: a server under 200,000 pipelined requests for a few seconds
 */
import { jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { startServer, stopServer, type ServerProcess } from '../support/server-process';
import { open, sleep, timed } from '../support/sockets';

jest.setTimeout(90_000);

/** The server's resident memory, in MB. */
function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(kb?.[1] ?? NaN) / 1024;
}

/** How long `/health/live` takes to answer, or Infinity if it does not within 5 s. */
async function liveMs(server: ServerProcess): Promise<number> {
  try {
    const { value, ms } = await timed(() => fetch(`${server.url}/health/live`, { signal: AbortSignal.timeout(5_000) }));
    return value.status === 200 ? ms : Infinity;
  } catch {
    return Infinity;
  }
}

describe('a client that pipelines and never reads', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  beforeAll(async () => {
    database = await freshDatabase();
    server = await startServer({ DATABASE_URL: database.url });
  });
  afterAll(async () => {
    await stopServer(server);
    await database.drop();
  });

  it('costs bounded memory, leaves liveness answering, and lets SIGTERM drain and exit 0', async () => {
    const pid = server.child.pid!;
    for (let i = 0; i < 20; i++) await liveMs(server);
    const idle = rssMb(pid);

    const socket = await open(server.port);
    socket.pause(); // never reads a single answer
    socket.write(Buffer.from('GET /plants HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(200_000)));

    let peak = idle;
    const probes: number[] = [];
    const until = Date.now() + 4_000;
    while (Date.now() < until) {
      probes.push(await liveMs(server));
      peak = Math.max(peak, rssMb(pid));
      await sleep(200);
    }

    server.child.kill('SIGTERM');
    const code = await server.exited;
    socket.destroy();

    // Room for a loaded machine, whose garbage collector falls behind and lets the heap grow
    // further before it collects; still a fraction of what reading it all would take.
    expect(Math.round(peak - idle)).toBeLessThan(200);
    // Every probe answered (within its 5 s), and the drain was not held (it would exit 1).
    expect(probes.filter((probeMs) => probeMs === Infinity)).toEqual([]);
    expect(code).toBe(0);
  });
});
