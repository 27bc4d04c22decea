import { connect } from 'node:net';

/** Sends bytes as they are, for requests no HTTP client would send; resolves with the reply. */
export function rawRequest(port: number, payload: string | Buffer, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no reply in time'));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined); // the server may reset after answering
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    socket.write(payload);
  });
}

/** The JSON body of a raw HTTP/1.1 reply. */
export function replyBody(reply: string): unknown {
  const start = reply.indexOf('\r\n\r\n');
  return JSON.parse(reply.slice(start + 4));
}
