import type { Server as HttpServer } from 'node:http';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { listen as listenOn } from './listen';

/**
 * How many sockets listen on the public port. Node accepts one waiting connection each time a
 * listening socket is reported ready, about once per turn of its event loop, so a process busy
 * with thousands of requests accepts new connections only as often as its loop comes round: a
 * storm of reconnecting clients overflows the kernel's queue and waits for SYN retries (1 s, 3 s…).
 * With several sockets on the port (SO_REUSEPORT: the kernel spreads new connections over
 * them), each turn accepts from each, and each has its own queue (docs/decisions.md, Limits;
 * test/process/connection-storm.spec.ts).
 */
export const PUBLIC_LISTENERS = 512;

/**
 * How many sockets listen on the public port with `limit` descriptors to spend: PUBLIC_LISTENERS,
 * or an eighth of a smaller limit, so that most of it is left for connections.
 */
export function listenersWithin(limit: number | undefined): number {
  if (limit === undefined) return PUBLIC_LISTENERS;
  return Math.max(1, Math.min(PUBLIC_LISTENERS, Math.floor(limit / 8)));
}

/**
 * The public port: the HTTP server's own listening socket, and `count` - 1 more on the same port
 * (`reusePort`; `listenersWithin`), each handing what it accepts to the HTTP server (its documented
 * 'connection' event), so that every connection is the server's whichever socket took it.
 *
 * Another process may bind a port that is listened on with SO_REUSEPORT (if it runs as the same
 * user and asks for it too), so the port is first bound alone for a moment (`reservePort`): a
 * port already in use fails the start (EADDRINUSE) as with one socket. Under WORKERS the primary
 * checks and holds it (`holdPort`), and every worker listens on it with sockets of its own, as
 * one process does: the kernel spreads a storm over all of them. (Through Node's cluster the
 * primary would accept every connection on one socket and pass each to a worker, which falls
 * seconds behind a storm: docs/performance.md.)
 */
export class PublicPort {
  private readonly others: Server[] = [];

  constructor(
    private readonly server: HttpServer,
    private readonly count: number,
  ) {}

  /** Every socket listening on the port: the HTTP server's first. */
  get listeners(): readonly Server[] {
    return [this.server, ...this.others];
  }

  /**
   * Listens on `port` (0: a free one), checked free first unless `reserved`: a cluster worker's
   * port, which the primary checked, chose and holds (`holdPort`).
   */
  async listen(port: number, host: string, reserved = false): Promise<AddressInfo> {
    const free = reserved ? port : await reservePort(port, host);
    // `exclusive`: in a cluster worker, these sockets are the worker's own, not the primary's.
    const address = await listenOn(this.server, { port: free, host, reusePort: true, exclusive: true });
    for (let i = 1; i < this.count; i++) {
      // As http.Server makes its own socket: half-open allowed (HTTP decides), no Nagle delay.
      const other = createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
        this.server.emit('connection', socket);
      });
      await listenOn(other, { port: address.port, host, reusePort: true, exclusive: true });
      this.others.push(other);
    }
    return address;
  }
}

/**
 * Binds `port` alone for a moment and lets it go: rejects (EADDRINUSE…) if anything holds it,
 * else resolves with it (the free port the kernel chose, for 0).
 */
async function reservePort(port: number, host: string): Promise<number> {
  const alone = createServer();
  const { port: free } = await listenOn(alone, { port, host, exclusive: true });
  await new Promise((resolve) => alone.close(resolve));
  return free;
}

export interface HeldPort {
  port: number;
  /** Lets the port go (once; again does nothing). */
  release: () => void;
}

/**
 * A cluster primary's hold on the public port until its first worker listens: checked free
 * (`reservePort`), then kept by a socket that shares it (`reusePort`), so that nothing else
 * takes it while the workers start (a second or two; for PORT=0, the kernel would hand the
 * freed port to the next process, or to this one's metrics listener, that asks for any port).
 * What connects before a worker listens is closed: nothing here serves it.
 */
export async function holdPort(port: number, host: string): Promise<HeldPort> {
  const free = await reservePort(port, host);
  const holder = createServer((socket) => socket.destroy());
  await listenOn(holder, { port: free, host, reusePort: true, exclusive: true });
  let held = true;
  const release = (): void => {
    if (held) holder.close();
    held = false;
  };
  return { port: free, release };
}

const WORKER_SERVING = 'plant-store:serving';

/**
 * What a cluster worker tells the primary once it listens (in place of Node's cluster
 * 'listening'); the port is the one the primary holds for it.
 */
export interface WorkerServing {
  type: typeof WORKER_SERVING;
}

export function workerServing(): WorkerServing {
  return { type: WORKER_SERVING };
}

export function isWorkerServing(message: unknown): message is WorkerServing {
  return (message as Partial<WorkerServing> | null)?.type === WORKER_SERVING;
}
