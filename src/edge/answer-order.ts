import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { IDLE_SOCKET_TIMEOUT_MS } from './http-server';
import { LINGER_MAX_BYTES, LINGER_MS, SocketHandling } from './node-sockets';

/**
 * How many requests may wait for their turn on one connection before it stops being read: a
 * client that pipelines and never reads then costs what it has sent so far (one read of the
 * socket at most beyond this), not everything it sends.
 */
export const MAX_WAITING = 16;

/** A request waiting for its turn, or a refusal of bytes that never became a request. */
type Turn = { request: IncomingMessage; response: ServerResponse } | (() => void);

/** One open connection, as the answer order sees it. */
export interface Connection {
  readonly socket: Socket;
  /** The response of the request being run, until it has been written (or abandoned). */
  active?: ServerResponse;
  /** When the active request began (Date.now()). */
  since: number;
  waiting: Turn[];
  /** Decided to close: nothing more that arrives on it runs. */
  closing: boolean;
  /** Not read while MAX_WAITING requests wait on it. */
  paused: boolean;
}

/**
 * Answers on each connection in the order their requests came (RFC 9112 §9.3.2, §9.6). Node
 * parses pipelined requests as they arrive and hands them all over at once; it writes their
 * answers in order, but runs them side by side. Here a request runs only once every earlier one
 * on its connection has been answered, so a refusal of later bytes (a malformed request,
 * oversized headers, a `CONNECT`) is written after every earlier answer, never ahead of it, and
 * nothing runs after an answer that closes the connection.
 *
 * Hand-written because no maintained library orders pipelined requests for Node's HTTP server.
 */
@Injectable()
export class AnswerOrder {
  private readonly open = new Map<Socket, Connection>();
  private handlers: RequestListener[] = [];
  /** Called, once the drain has begun, each time a connection has nothing left to run. */
  private readonly idleWatchers: ((connection: Connection) => void)[] = [];

  constructor(private readonly sockets: SocketHandling) {}

  /** The response of the request being run on `socket`, until it has been written. */
  activeOn(socket: Socket): ServerResponse | undefined {
    return this.open.get(socket)?.active;
  }

  /** How many connections are open. */
  get size(): number {
    return this.open.size;
  }

  /** Every open connection. */
  connections(): IterableIterator<Connection> {
    return this.open.values();
  }

  /** Whether nothing is under way or waiting on `connection`. */
  isIdle(connection: Connection): boolean {
    return connection.active === undefined && connection.waiting.length === 0;
  }

  /** From now on calls `watcher` with each connection that has nothing under way: a new one, or one whose last answer was written. */
  onIdle(watcher: (connection: Connection) => void): void {
    this.idleWatchers.push(watcher);
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
      const connection: Connection = { socket, since: 0, waiting: [], closing: false, paused: false };
      this.open.set(socket, connection);
      whenNodeCloses(socket, () => this.answeredLast(connection), this.sockets.uses.lingeringClose);
      // Node resumes the socket whenever a request's body is read or thrown away, and once its
      // answers have left: while requests wait here, it is paused again before it is read.
      socket.on('resume', () => {
        if (connection.paused) socket.pause();
      });
      socket.once('close', () => {
        this.open.delete(socket);
        connection.waiting = [];
      });
      for (const watcher of this.idleWatchers) watcher(connection);
    });
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
      closeSocket(socket as Socket, false, this.sockets.uses.lingeringClose);
      return;
    }
    if (connection.closing) return;
    const turn = (): void => {
      refuse();
      // Node's parser has stopped (a parse error) or let the socket go (CONNECT): read it here.
      this.close(connection, false);
    };
    // Node has stopped parsing this connection: nothing after the refusal will arrive as a request.
    if (this.isIdle(connection)) turn();
    else connection.waiting.push(turn);
  }

  /** Closes `connection` after what was written to it: nothing more on it runs. */
  close(connection: Connection, parserReads = true): void {
    connection.closing = true;
    connection.paused = false;
    for (const turn of connection.waiting) if (typeof turn !== 'function') turn.request.resume();
    connection.waiting = [];
    // The body of the request just answered may be unread and paused: the parser throws it away.
    connection.active?.req.resume();
    closeSocket(connection.socket, parserReads, this.sockets.uses.lingeringClose);
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
    if (!this.isIdle(connection)) {
      connection.waiting.push({ request, response });
      // Node's own backpressure never starts here: a waiting request writes nothing until it runs.
      if (connection.waiting.length >= MAX_WAITING) {
        connection.paused = true;
        connection.socket.pause();
      }
      return;
    }
    this.begin(connection, request, response);
  }

  private begin(connection: Connection, request: IncomingMessage, response: ServerResponse): void {
    connection.active = response;
    connection.since = Date.now();
    // A response closes once: `on` spares every request the wrapper `once` makes and its removal.
    response.on('close', () => this.answered(connection, response));
    this.run(request, response);
  }

  private run(request: IncomingMessage, response: ServerResponse): void {
    // Node turns the idle timeout off for every request after the first on a kept-alive
    // connection (keepAliveTimeout runs between requests instead): each turn turns it back on.
    request.socket.setTimeout(IDLE_SOCKET_TIMEOUT_MS);
    for (const handler of this.handlers) handler(request, response);
  }

  /** The active response has been written, or abandoned (its client gone, its deadline past). */
  private answered(connection: Connection, response: ServerResponse): void {
    if (connection.active !== response) return;
    connection.active = undefined;
    // Not written whole, or Node is closing the socket after it (its own close: see SocketHandling).
    if (!response.writableFinished || !connection.socket.writable) connection.closing = true;
    if (connection.closing) {
      connection.paused = false;
      for (const turn of connection.waiting) if (typeof turn !== 'function') turn.request.resume();
      connection.waiting = [];
      return;
    }
    const next = connection.waiting.shift();
    if (connection.paused && connection.waiting.length <= MAX_WAITING / 2) {
      connection.paused = false;
      connection.socket.resume();
    }
    if (next === undefined) {
      for (const watcher of this.idleWatchers) watcher(connection);
    } else if (typeof next === 'function') {
      next();
    } else {
      // Held as the active one, so nothing that arrives meanwhile runs ahead of it; begun on the
      // next turn, so that a connection's pipelined requests take turns with everyone else's
      // instead of running back to back while its answers fit in the kernel's buffers.
      connection.active = next.response;
      setImmediate(() => {
        if (connection.closing) {
          connection.active = undefined;
          next.request.resume();
        } else {
          this.begin(connection, next.request, next.response);
        }
      });
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
}

/**
 * Calls `closing` where Node would close `socket` after an answer that ends the connection, to
 * close it lingering; with Node's own close (`lingering` off), nothing: Node closes it.
 */
export function whenNodeCloses(socket: Socket, closing: () => void, lingering: boolean): void {
  if (lingering) socket.destroySoon = closing;
}

/**
 * Closes `socket` once what was written to it has been sent: lingering (SocketShortcuts), or as
 * Node does. `parserReads`: whether Node's HTTP parser still reads the connection (it then dumps
 * a request's body and runs nothing more); otherwise (after a parse error, or a `CONNECT`) the
 * bytes are read here.
 */
export function closeSocket(socket: Socket, parserReads: boolean, lingering: boolean): void {
  if (lingering) {
    lingeringClose(socket, parserReads);
  } else if (!socket.destroyed) {
    socket.end();
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  }
}

const lingering = new WeakSet<Socket>();

/**
 * Half-closes `socket` once what was written to it has been sent, then lets the client's bytes
 * be read and thrown away until it closes its side, LINGER_MS pass or LINGER_MAX_BYTES more
 * arrive.
 */
function lingeringClose(socket: Socket, parserReads: boolean): void {
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
