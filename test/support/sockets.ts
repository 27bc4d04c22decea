import { type IncomingHttpHeaders, request } from 'node:http';
import { connect, type Socket } from 'node:net';

/** A raw connection to the server, open; rejects if it cannot be opened. */
export function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    // Once open, a test reads failures from the socket itself.
    socket.on('error', reject);
  });
}

/**
 * One request on a connection of its own: a pooled kept-alive one (fetch's) may be reused just as
 * a server with short deadlines closes it, and fail with ECONNRESET.
 */
export function requestOnce(
  port: number,
  path: string,
  method = 'GET',
): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, method, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers }));
    })
      .on('error', reject)
      .end();
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `work`'s value and how long it took. */
export async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await work();
  return { value, ms: Date.now() - started };
}

export { freePort } from '../../scripts/free-port.mjs';
