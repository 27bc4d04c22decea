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
 * The public port: the HTTP server's own listening socket, and PUBLIC_LISTENERS - 1 more on the
 * same port (`reusePort`), each handing what it accepts to the HTTP server (its documented
 * 'connection' event), so that every connection is the server's whichever socket took it.
 *
 * Another process may bind a port that is listened on with SO_REUSEPORT (if it runs as the same
 * user and asks for it too), so the port is first bound alone for a moment: a port already in
 * use fails the start (EADDRINUSE) as with one socket. In a cluster worker (WORKERS), the
 * primary accepts for every worker in an event loop that does nothing else, and the port is
 * the cluster's: the worker listens once, as Node's cluster expects.
 */
export class PublicPort {
  private readonly others: Server[] = [];

  constructor(private readonly server: HttpServer) {}

  /** Every socket listening on the port: the HTTP server's first. */
  get listeners(): readonly Server[] {
    return [this.server, ...this.others];
  }

  async listen(port: number, host: string, clusterWorker: boolean): Promise<AddressInfo> {
    if (clusterWorker) return listenOn(this.server, { port, host });
    const alone = createServer();
    const free = await listenOn(alone, { port, host, exclusive: true });
    await new Promise((resolve) => alone.close(resolve));
    const address = await listenOn(this.server, { port: free.port, host, reusePort: true, exclusive: true });
    for (let i = 1; i < PUBLIC_LISTENERS; i++) {
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
