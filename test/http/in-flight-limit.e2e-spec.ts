import { connect, type Socket } from 'node:net';
import { replyBody } from '../support/raw-http';
import { sleep } from '../support/sockets';
import { startTestApp, type TestApp } from '../support/app';

/**
 * MAX_IN_FLIGHT: past the bound, a request is answered at once with 503 and Retry-After, before
 * its body is read, and its connection closed; the probes are always answered; a request that
 * has been answered no longer counts.
 */
describe('MAX_IN_FLIGHT', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp({ MAX_IN_FLIGHT: '1' });
    port = await t.listen();
  });
  afterAll(async () => {
    await t.close();
  });

  /** Sends `head` (and `body`); the reply, once the server closes or a whole JSON body has come. */
  function exchange(head: string, body = '', ms = 3_000): { socket: Socket; reply: Promise<string> } {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    let text = '';
    const reply = new Promise<string>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (/\r\n\r\n\{.*\}$/s.test(text)) resolve(text);
      });
      socket.on('close', () => resolve(text));
      setTimeout(() => resolve(text), ms).unref();
    });
    socket.write(head + body);
    return { socket, reply };
  }

  const createHead = (id: number, length: number): string =>
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${length}\r\n\r\n`;

  it('answers 503 with Retry-After at once, before reading the body, while the bound is reached', async () => {
    const body = '{"id":1,"name":"held"}';
    // In flight until its body is complete.
    const held = exchange(createHead(1, body.length), body.slice(0, 5), 10_000);
    await sleep(200);

    const shed = exchange(createHead(2, 1_000)); // a body it never sends, so the answer comes before it
    const reply = await shed.reply;
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(reply).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(reply).toMatch(/\r\nConnection: close\r\n/i);
    expect(replyBody(reply)).toEqual({ error: 503, message: 'The server is at capacity; try again shortly' });

    // The probes are never shed: a liveness probe refused under load would get the process restarted.
    const live = await exchange('GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').reply;
    expect(live).toMatch(/^HTTP\/1\.1 200 /);

    held.socket.write(body.slice(5));
    expect(await held.reply).toMatch(/^HTTP\/1\.1 200 /);
    held.socket.destroy();
    await sleep(50);
    // Answered, it no longer counts.
    const after = exchange(
      createHead(3, 22).replace('Content-Length', 'Connection: close\r\nContent-Length'),
      '{"id":3,"name":"free"}',
    );
    expect(await after.reply).toMatch(/^HTTP\/1\.1 200 /);
  });
});
