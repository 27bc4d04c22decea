import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { type ErrorBody, ErrorCode } from '../errors/error-codes';
import { OpenRequests } from './open-requests';

/** After deciding to close, how long a connection still reads (and drops) what its client sends. */
export const LINGER_MS = 2_000;
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;

export type ErrorHeaders = Readonly<Record<string, string>>;

/** Every failure's answer, the Error body; and the connections it closes, gracefully. */
@Injectable()
export class ErrorResponses {
  constructor(private readonly requests: OpenRequests) {}

  /**
   * Half-close after the answer, then drop what the client still sends (bounded), so unread bytes
   * never make the kernel reset the connection and lose the answer.
   */
  closeLingering(socket: Duplex, reading?: IncomingMessage): void {
    this.requests.closing(socket);
    const net = socket as Socket;
    const startBytes = net.bytesRead;
    const done = (): void => void socket.destroy();
    const deadline = setTimeout(done, LINGER_MS).unref();
    const meter = setInterval(() => net.bytesRead - startBytes > LINGER_MAX_BYTES && done(), 100).unref();
    socket.once('close', () => {
      clearTimeout(deadline);
      clearInterval(meter);
    });
    socket.once('end', done);
    socket.end();
    reading?.resume();
    socket.resume();
  }

  /** A request whose body is unread is answered and its connection closed, rather than its body read. */
  write(request: IncomingMessage, response: ServerResponse, body: ErrorBody, headers: ErrorHeaders = {}): void {
    if (!this.requests.failing(response, body.error)) return; // answered already: by a refusal of its connection
    // Too late for an answer in the contract: cut the connection rather than send a wrong one.
    if (response.headersSent) return void request.socket.destroy();
    const json = JSON.stringify(body);
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    response.statusCode = 400;
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.setHeader('Content-Length', Buffer.byteLength(json));
    const closes =
      !request.complete || this.requests.isClosing(request.socket) || response.getHeader('Connection') === 'close';
    if (!closes) return void response.end(json);
    response.setHeader('Connection', 'close');
    this.requests.closing(request.socket);
    // A HEAD answer has no body to wait on: Node ends the connection once its head is written.
    if (request.method === 'HEAD') return void response.end();
    // Not ended: Node would destroy the socket as soon as the answer is written.
    response.write(json, () => this.closeLingering(request.socket, request));
  }

  /** The server's own refusals (capacity, the drain): 503 with `Retry-After`, connection closed. */
  unavailable(request: IncomingMessage, response: ServerResponse, message: string): void {
    response.setHeader('Connection', 'close');
    this.write(request, response, { error: ErrorCode.ServiceUnavailable, message }, { 'Retry-After': '1' });
  }

  /** The same answer straight to a socket, for bytes that never became a request; then a lingering close. */
  writeRaw(socket: Duplex, body: ErrorBody, requestId: string, headers: ErrorHeaders = {}): void {
    const json = JSON.stringify(body);
    const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(
      'HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(json)}\r\nX-Request-Id: ${requestId}\r\n${extra.join('')}` +
        `Connection: close\r\n\r\n${json}`,
    );
    this.closeLingering(socket);
  }
}
