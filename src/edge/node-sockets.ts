import { Server } from 'node:http';
import { Socket } from 'node:net';
import type { Logger } from 'pino';

/**
 * After deciding to close, how long a connection keeps reading (and discarding) what the client
 * still sends, so that its answer is not lost to a reset, and at most how much it reads.
 */
export const LINGER_MS = 2_000;
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** How often Node checks its request timeouts (see SocketHandling.adopt). */
export const CONNECTIONS_CHECK_MS = 1_000;

/**
 * How this process's connections are closed: Node's own handling loses answers or leaves the
 * contract in four places, so these replace it. Each relies on something of Node's beyond its
 * documented interface, checked at start (`SocketHandling.decide`); one found changed is not
 * used, and Node's own behaviour runs instead:
 * - **lingering close**: a connection is closed the way mature servers close one: half-close after
 *   the answer, then read and discard what the client still sends, for at most LINGER_MS and
 *   LINGER_MAX_BYTES, before letting go. Closing a socket with unread bytes makes the kernel send
 *   a reset, and a reset makes the client's kernel drop the answer it has not read yet. Node's
 *   close after a `Connection: close` answer is its `socket.destroySoon()`, replaced per socket
 *   (Node offers no option); off: Node's `destroySoon()` runs, and a close of ours is `end()`
 *   then `destroy()`.
 * - **drain idle grace**: `server.close()` calls `server.closeIdleConnections()`, which resets
 *   every idle kept-alive connection at once, a request already on its way in the kernel's
 *   buffers with it; replaced by the drain's own (which waits a moment); off: Node's.
 * - **half-open requests**: a client may send its request and then close its side (FIN); it
 *   still wants the answer. Node's default aborts the request in flight; the server's
 *   undocumented `httpAllowHalfOpen` answers it first; off: Node's default.
 */
export interface SocketShortcuts {
  lingeringClose: boolean;
  drainIdleGrace: boolean;
  halfOpenRequests: boolean;
  serverOptions: boolean;
}

/** Each one's name in the start-up warning and the docs, and what runs in its place when off. */
const NAMES: Readonly<Record<keyof SocketShortcuts, readonly [string, string]>> = {
  lingeringClose: ['lingering close', "Node's socket.destroySoon()"],
  drainIdleGrace: ['drain idle grace', "Node's server.closeIdleConnections()"],
  halfOpenRequests: ['half-open requests', "Node's abort of a request whose client half-closed"],
  serverOptions: [
    'server options after creation',
    "Node's defaults: timeouts checked every 30 s, a bare 400 for a request without Host",
  ],
};

/** The Node.js lines these were tested on: a newer one may have changed what they rely on. */
export const TESTED_NODE_LINES = ['22', '24', '26'];

function changedMethod(owner: object, label: string, method: string, arity: number): string | undefined {
  const value = (owner as Record<string, unknown>)[method];
  if (typeof value !== 'function') return `${label}.${method} is not a function`;
  if (value.length !== arity) return `${label}.${method} takes ${value.length} parameters, not ${arity}`;
  return undefined;
}

/** What each relies on, as it is in this process: undefined when as tested, or what changed. */
const CHECKS: Readonly<Record<keyof SocketShortcuts, () => string | undefined>> = {
  lingeringClose: () => changedMethod(Socket.prototype, 'net.Socket', 'destroySoon', 0),
  drainIdleGrace: () => changedMethod(Server.prototype, 'http.Server', 'closeIdleConnections', 0),
  halfOpenRequests: () =>
    typeof (new Server() as Server & { httpAllowHalfOpen?: unknown }).httpAllowHalfOpen === 'boolean'
      ? undefined
      : 'http.Server has no httpAllowHalfOpen',
  serverOptions: () => {
    const made = new Server() as Server & { connectionsCheckingInterval?: unknown; requireHostHeader?: unknown };
    if (typeof made.connectionsCheckingInterval !== 'number') return 'http.Server has no connectionsCheckingInterval';
    if (typeof made.requireHostHeader !== 'boolean') return 'http.Server has no requireHostHeader';
    return undefined;
  },
};

export class SocketHandling {
  constructor(readonly uses: SocketShortcuts) {}

  /** Every one whose internals look as tested; each that does not is named in one warning line. */
  static decide(logger: Logger, node = process.versions.node.split('.')[0]): SocketHandling {
    const uses = {} as Record<keyof SocketShortcuts, boolean>;
    for (const [shortcut, check] of Object.entries(CHECKS) as [keyof SocketShortcuts, () => string | undefined][]) {
      const changed = TESTED_NODE_LINES.includes(node)
        ? check()
        : `node ${node} is not a tested release (${TESTED_NODE_LINES.join(', ')})`;
      uses[shortcut] = changed === undefined;
      if (changed !== undefined) {
        const [name, stock] = NAMES[shortcut];
        logger.warn(
          { context: 'Sockets', shortcut: name, changed },
          `sockets: ${name} is off (${changed}); ${stock} runs instead`,
        );
      }
    }
    return new SocketHandling(uses);
  }

  /**
   * On `server`: answers to half-closed requests, the drain's own close of idle connections, and
   * two options of `http.createServer` set on a server Nest has already made (Nest offers no way
   * to pass them): the request timeouts checked every CONNECTIONS_CHECK_MS (Node's 30 s would let
   * a dribbling client hold its socket for up to 40 s), and a request without Host handed to the
   * application, which answers it in the contract (Admission), not with Node's bare 400.
   */
  adopt(server: Server, closeIdleConnections: () => void): void {
    if (this.uses.halfOpenRequests) (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    if (this.uses.drainIdleGrace) server.closeIdleConnections = closeIdleConnections;
    if (this.uses.serverOptions) {
      Object.assign(server, { connectionsCheckingInterval: CONNECTIONS_CHECK_MS, requireHostHeader: false });
    }
  }
}
