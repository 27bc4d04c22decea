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

/** The bytes of a create of `{id, name}` with `token`, with a `Connection` header when given. */
export function createRequest(token: string, id: number, name: string, connection?: 'close' | 'keep-alive'): string {
  const body = `{"id":${id},"name":"${name}"}`;
  return (
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
    (connection === undefined ? '' : `Connection: ${connection}\r\n`) +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  );
}

/** Where the first whole answer (head and Content-Length's body) in `text` ends; -1 until it has come. */
export function answerEnd(text: string): number {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd === -1) return -1;
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, headEnd))?.[1] ?? 0);
  return text.length < headEnd + 4 + length ? -1 : headEnd + 4 + length;
}
