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

export interface Exchange {
  /** Everything the server sent, in order. */
  reply: string;
  /** The socket error the client met, if any (ECONNRESET: an answer may have been lost). */
  error?: string;
}

/**
 * Writes `payload` (in one write unless it is an array), then reads until the server closes,
 * ending its own side once an answer says `Connection: close` (ending it before its answers have
 * come would lose them: Node ends a connection on its client's FIN). `readAfterMs`: a client that
 * is slow to read (a reset meanwhile makes its kernel drop the answer it has not read yet).
 */
export function exchange(
  port: number,
  payload: string | Buffer | (string | Buffer)[],
  { readAfterMs = 0 }: { readAfterMs?: number } = {},
): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    if (readAfterMs > 0) {
      socket.pause();
      setTimeout(() => socket.resume(), readAfterMs);
    }
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (/\r\nconnection: close\r\n/i.test(Buffer.concat(chunks).toString('latin1'))) socket.end();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on('close', () => resolve({ reply: Buffer.concat(chunks).toString('utf8'), error }));
    for (const part of Array.isArray(payload) ? payload : [payload]) socket.write(part);
  });
}

/**
 * The status line's code and the body of each answer in `reply`, in order (`error` for a 400).
 * `headOnly(i)`: the i-th answer (100s not counted) is to a HEAD, whose Content-Length has no body.
 */
export function answers(
  reply: string,
  headOnly: (index: number) => boolean = () => false,
): { code: number; body: string; head: string }[] {
  const found: { code: number; body: string; head: string }[] = [];
  let rest = reply;
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    const head = rest.slice(0, headEnd);
    if (head.startsWith('HTTP/1.1 100')) {
      found.push({ code: 100, body: '', head });
      rest = rest.slice(headEnd + 4);
      continue;
    }
    const bodiless = headOnly(found.filter((answer) => answer.code !== 100).length);
    const length = bodiless ? 0 : Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
    const body = rest.slice(headEnd + 4, headEnd + 4 + length);
    const code = head.startsWith('HTTP/1.1 200')
      ? 200
      : bodiless
        ? Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1])
        : (JSON.parse(body) as { error: number }).error;
    found.push({ code, body, head });
    rest = rest.slice(headEnd + 4 + length);
  }
  if (rest !== '') throw new Error(`not an answer: ${rest.slice(0, 200)}`);
  return found;
}
