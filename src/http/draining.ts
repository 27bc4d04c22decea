import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ErrorCode } from '../errors/error-codes';
import { writeError } from '../errors/error-response';

/**
 * Graceful shutdown, as seen by connections. Once it begins:
 * - the listener stops accepting (the caller closes the server);
 * - every connection with no request in flight is closed at once, including one that has sent
 *   nothing or only part of its headers (Node's own `closeIdleConnections` keeps those);
 * - a new request on a kept-alive connection is refused (code 503, `Connection: close`), so the
 *   client retries elsewhere, while requests already in flight run to their end and then close
 *   their connection.
 */
export class Draining {
  private draining = false;
  private readonly inFlight = new Map<Socket, number>();

  get active(): boolean {
    return this.draining;
  }

  /** Counts requests per connection from the moment Node hands them over. */
  track(server: Server): void {
    server.on('connection', (socket: Socket) => {
      this.inFlight.set(socket, 0);
      socket.once('close', () => this.inFlight.delete(socket));
    });
    server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
      const socket = request.socket;
      this.inFlight.set(socket, (this.inFlight.get(socket) ?? 0) + 1);
      response.once('close', () => {
        const left = (this.inFlight.get(socket) ?? 1) - 1;
        this.inFlight.set(socket, left);
        if (this.draining && left === 0) socket.destroySoon();
      });
    });
  }

  start(): void {
    this.draining = true;
    for (const [socket, requests] of this.inFlight) {
      if (requests === 0) socket.destroy();
    }
  }

  readonly middleware = (request: IncomingMessage, response: ServerResponse, next: () => void): void => {
    if (!this.draining) {
      next();
      return;
    }
    response.setHeader('Connection', 'close');
    writeError(
      request,
      response,
      { error: ErrorCode.ServiceUnavailable, message: 'The server is shutting down; try again' },
      { 'Retry-After': '1' },
    );
  };
}
