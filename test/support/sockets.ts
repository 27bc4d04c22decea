import { connect, type Socket } from 'node:net';

/** A raw connection to the server, open; rejects if it cannot be opened. */
export function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    // Once open, a test reads failures from the socket itself.
    socket.on('error', reject);
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
