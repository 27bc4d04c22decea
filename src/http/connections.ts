import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { writeUnavailable } from '../errors/error-response';
import { isProbe } from './probes';

/**
 * After deciding to close, how long a connection keeps reading (and discarding) what the client
 * still sends, so that its answer is not lost to a reset, and at most how much it reads.
 */
export const LINGER_MS = 2_000;
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/**
 * When a drain begins, how long an idle kept-alive connection stays open: a request that is
 * already on its way (in the kernel's buffers) is read and answered 503, never reset.
 */
export const DRAIN_IDLE_GRACE_MS = 250;
/** How often responses are checked against their deadline (see enforceDeadline). */
export const DEADLINE_CHECK_MS = 1_000;

/** A request waiting for its turn, or a refusal of bytes that never became a request. */
type Turn = { request: IncomingMessage; response: ServerResponse } | (() => void);

interface Connection {
  socket: Socket;
  /** The response of the request being run, until it has been written (or abandoned). */
  active?: ServerResponse;
  /** When the active request began (Date.now()). */
  since: number;
  waiting: Turn[];
  /** Decided to close: nothing more that arrives on it runs. */
  closing: boolean;
}

/**
 * What happens on each connection, in the order it happened (RFC 9112 §9.3.2, §9.6):
 *
 * - **One request at a time.** Node parses pipelined requests as they arrive and hands them all
 *   over at once; it writes their answers in order, but runs them side by side. Here a request
 *   runs only once every earlier one on its connection has been answered, so a refusal of later
 *   bytes (a malformed request, oversized headers, a `CONNECT`) is written after every earlier
 *   answer, never ahead of it, and nothing runs after an answer that closes the connection.
 * - **Closing without losing the last answer.** A connection is closed the way mature servers do
 *   (a lingering close): half-close after the answer, then read and discard what the client still
 *   sends, for at most LINGER_MS and LINGER_MAX_BYTES, before letting go. Closing a socket with
 *   unread bytes makes the kernel send a reset, and a reset makes the client's kernel drop the
 *   answer it has not read yet. Node's own close after a `Connection: close` answer is its
 *   `socket.destroySoon()`, which is replaced per socket for that reason: Node offers no option.
 * - **Draining** (SIGTERM, see `gracefulShutdown`): a request that arrives on an open connection,
 *   or on one accepted during the drain, is refused (503,
 *   `Connection: close`); requests in flight run to their end, and their answers say
 *   `Connection: close` too; a connection with nothing under way is closed once it has stayed
 *   so for DRAIN_IDLE_GRACE_MS, so that a request already on its way is answered, not reset.
 *
 * Hand-written because no maintained library orders pipelined requests for Node's HTTP server.
 */
export class Connections {
  private draining = false;
  private readonly open = new Map<Socket, Connection>();
  private handlers: RequestListener[] = [];

  get active(): boolean {
    return this.draining;
  }

  /** The response of the request being run on `socket`, until it has been written. */
  activeOn(socket: Socket): ServerResponse | undefined {
    return this.open.get(socket)?.active;
  }

  /**
   * Puts this between the server and its request listeners (the application): call it once the
   * application's listeners are registered.
   */
  track(server: Server): void {
    this.handlers = server.listeners('request') as RequestListener[];
    server.removeAllListeners('request');
    server.on('request', (request: IncomingMessage, response: ServerResponse) => this.arrive(request, response));
    server.on('connection', (socket: Socket) => {
      const connection: Connection = { socket, since: 0, waiting: [], closing: false };
      this.open.set(socket, connection);
      socket.destroySoon = () => this.answeredLast(connection);
      socket.once('close', () => {
        this.open.delete(socket);
        connection.waiting = [];
      });
      // Accepted during the drain (it was already waiting in the kernel): it gets its 503.
      if (this.draining) this.closeWhenIdle(connection);
    });
    // `server.close()` calls this, and Node's own resets every idle connection at once.
    server.closeIdleConnections = () => {
      for (const connection of this.open.values()) this.closeWhenIdle(connection);
    };
  }

  /**
   * Every response is delivered within `deadlineMs` of its request's start: one whose answer has
   * begun but not been read (a client reading a byte a second keeps the idle timeout from firing)
   * has its connection cut; a request that arrived whole but has no answer yet (nothing the
   * service waits for should last this long: every store wait is bounded) is answered 503 and
   * its connection closed. One check of every open connection each DEADLINE_CHECK_MS, against
   * the deadline less that period, rather than a timer and a listener for every request.
   */
  enforceDeadline(server: Server, deadlineMs: number): void {
    const check = setInterval(() => {
      const late = Date.now() - (deadlineMs - DEADLINE_CHECK_MS);
      for (const connection of this.open.values()) {
        const response = connection.active;
        if (response === undefined || connection.since > late) continue;
        if (response.headersSent || !response.req.complete) {
          response.destroy();
        } else {
          writeUnavailable(response.req, response, 'The server could not answer in time; try again');
        }
      }
    }, DEADLINE_CHECK_MS).unref();
    server.once('close', () => clearInterval(check));
  }

  /**
   * Runs `refuse` (which answers bytes that never became a request, and may write to the socket)
   * once every earlier answer on the connection has been written, then closes the connection.
   * Nothing is run on a connection already closing: its client is not waiting for more.
   */
  refuse(socket: Duplex, refuse: () => void): void {
    const connection = this.open.get(socket as Socket);
    if (connection === undefined) {
      refuse();
      lingeringClose(socket as Socket, false);
      return;
    }
    if (connection.closing) return;
    const turn = (): void => {
      refuse();
      // Node's parser has stopped (a parse error) or let the socket go (CONNECT): read it here.
      this.close(connection, false);
    };
    // Node has stopped parsing this connection: nothing after the refusal will arrive as a request.
    if (connection.active === undefined && connection.waiting.length === 0) turn();
    else connection.waiting.push(turn);
  }

  /**
   * Begins the drain (see the class comment); resolves once every request that was under way
   * when it began has been answered. Requests that arrive meanwhile are answered at once.
   */
  start(): Promise<void> {
    if (this.draining) return Promise.resolve();
    this.draining = true;
    const inFlight: Promise<unknown>[] = [];
    for (const connection of this.open.values()) {
      if (connection.active !== undefined && !connection.active.writableFinished) {
        const response = connection.active;
        inFlight.push(new Promise((resolve) => response.once('close', resolve)));
      }
      // An answer still to be written tells its client that this connection ends with it.
      if (connection.active?.headersSent === false) connection.active.setHeader('Connection', 'close');
      this.closeWhenIdle(connection);
    }
    return Promise.all(inFlight).then(() => undefined);
  }

  /** Closes `connection` after DRAIN_IDLE_GRACE_MS unless a request is under way on it then. */
  private closeWhenIdle(connection: Connection): void {
    setTimeout(() => {
      if (connection.active === undefined && connection.waiting.length === 0) this.close(connection);
    }, DRAIN_IDLE_GRACE_MS).unref();
  }

  /**
   * While draining, every request is refused (503) and its connection closed after the answer;
   * the probes are answered (liveness 200, readiness 503), so that an orchestrator can tell a
   * draining process from a dead one. True when this answered the request.
   */
  refusedWhileDraining(request: IncomingMessage, response: ServerResponse): boolean {
    if (!this.draining) return false;
    response.setHeader('Connection', 'close');
    if (isProbe(request)) return false;
    writeUnavailable(request, response, 'The server is shutting down; try again');
    return true;
  }

  private arrive(request: IncomingMessage, response: ServerResponse): void {
    const connection = this.open.get(request.socket);
    if (connection === undefined) {
      this.run(request, response);
      return;
    }
    if (connection.closing) {
      request.resume(); // after an answer that closes: never run, never answered, its body dumped
      return;
    }
    if (connection.active !== undefined || connection.waiting.length > 0) {
      connection.waiting.push({ request, response });
      return;
    }
    this.begin(connection, request, response);
  }

  private begin(connection: Connection, request: IncomingMessage, response: ServerResponse): void {
    connection.active = response;
    connection.since = Date.now();
    response.once('close', () => this.answered(connection, response));
    this.run(request, response);
  }

  private run(request: IncomingMessage, response: ServerResponse): void {
    for (const handler of this.handlers) handler(request, response);
  }

  /** The active response has been written, or abandoned (its client gone, its deadline past). */
  private answered(connection: Connection, response: ServerResponse): void {
    if (connection.active !== response) return;
    connection.active = undefined;
    if (!response.writableFinished) connection.closing = true;
    if (connection.closing) {
      connection.waiting = [];
      return;
    }
    const next = connection.waiting.shift();
    if (next === undefined) {
      if (this.draining) this.closeWhenIdle(connection);
    } else if (typeof next === 'function') {
      next();
    } else {
      this.begin(connection, next.request, next.response);
    }
  }

  /**
   * Node is done with the connection once this answer is written: the answer says
   * `Connection: close`, or the client has closed its side and this was its last request. In
   * the second case a refusal of bytes it sent after that request is still its due.
   */
  private answeredLast(connection: Connection): void {
    const response = connection.active;
    const clientEnded =
      response !== undefined &&
      response.shouldKeepAlive &&
      !/\bclose\b/i.test(String(response.getHeader('connection') ?? ''));
    if (clientEnded && connection.waiting.length > 0) return; // `answered` runs the refusal, which closes
    this.close(connection);
  }

  private close(connection: Connection, parserReads = true): void {
    connection.closing = true;
    for (const turn of connection.waiting) if (typeof turn !== 'function') turn.request.resume();
    connection.waiting = [];
    // The body of the request just answered may be unread and paused: the parser throws it away.
    connection.active?.req.resume();
    lingeringClose(connection.socket, parserReads);
  }
}

const lingering = new WeakSet<Socket>();

/**
 * Half-closes `socket` once what was written to it has been sent, then lets the client's bytes
 * be read and thrown away until it closes its side, LINGER_MS pass or LINGER_MAX_BYTES more
 * arrive. On a connection whose requests Node's HTTP parser still reads, the parser does that (a
 * request's body is dumped, later requests are never run); otherwise (after a parse error, or a
 * `CONNECT`, when the parser has stopped) the bytes are read here.
 */
function lingeringClose(socket: Socket, parserReads = true): void {
  if (socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  const startBytes = socket.bytesRead;
  const meter = setInterval(() => {
    if (socket.bytesRead - startBytes > LINGER_MAX_BYTES) socket.destroy();
  }, 100).unref();
  const deadline = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => {
    clearTimeout(deadline);
    clearInterval(meter);
  });
  socket.once('end', () => {
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  });
  socket.end();
  // First, while Node's own 'resume' listener can still restart a paused socket's reading.
  socket.resume();
  if (parserReads) return;
  const discard = (): void => undefined;
  // A 'data' listener makes Node hand the socket's bytes to JavaScript rather than straight to
  // its parser; Node's own listener, which feeds the parser, then goes.
  socket.on('data', discard);
  for (const listener of socket.listeners('data') as ((...args: unknown[]) => void)[]) {
    if (listener !== discard) socket.off('data', listener);
  }
}
