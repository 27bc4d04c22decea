import { once } from 'node:events';
import type { Socket } from 'node:net';
import { answerEnd, answers, createRequest, exchange } from '../support/raw-http';
import { open } from '../support/sockets';
import { listeningTestApp } from '../support/app';
import { ClientLimits } from '../../src/http/http-server';

/**
 * A connection serves 1,000 requests (here 100, the limit a test provides). The last answer says
 * `Connection: close`, so a client that waits for its answers opens a new connection; one that
 * pipelined past it gets its next request answered in the contract (503, `Retry-After`,
 * `X-Request-Id`), which closes the connection, and nothing after it runs.
 */
const MAX_REQUESTS_PER_CONNECTION = 100;

describe('requests past a connection limit', () => {
  const served = listeningTestApp({}, { limits: { requests: MAX_REQUESTS_PER_CONNECTION } });

  it('is 1,000 a connection in production', () => {
    expect(new ClientLimits().requests).toBe(1_000);
  });

  it('answers the limit of pipelined creates, then 503 in the contract, and runs nothing more', async () => {
    const count = MAX_REQUESTS_PER_CONNECTION + 2;
    const ids = Array.from({ length: count }, (_, i) => 700_000 + i);
    const { reply, error } = await exchange(
      served().port,
      ids.map((id) => createRequest(served().app.token, id, `n${id}`)).join(''),
    );
    expect(error).toBeUndefined();
    const got = answers(reply);
    expect(got).toHaveLength(MAX_REQUESTS_PER_CONNECTION + 1);
    expect(got.slice(0, -1).every((answer) => answer.code === 200)).toBe(true);
    const last = got[got.length - 1];
    expect(last.head).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(last.body)).toEqual({ error: 503, message: 'This connection has served all its requests' });
    expect(last.head).toMatch(/\r\nRetry-After: \d+/i);
    expect(last.head).toMatch(/\r\nX-Request-Id: \S+/i);
    expect(last.head).toMatch(/\r\nConnection: close/i);
    const [lastServed, refused, unread] = [
      ids[MAX_REQUESTS_PER_CONNECTION - 1],
      ids[MAX_REQUESTS_PER_CONNECTION],
      ids[count - 1],
    ];
    expect(await served().app.storedPlant(String(lastServed))).toBeDefined();
    expect(await served().app.storedPlant(String(refused))).toBeUndefined();
    expect(await served().app.storedPlant(String(unread))).toBeUndefined();
  });

  it('tells a client that waits for each answer, on the last, to open a new connection', async () => {
    const socket = await open(served().port);
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    const heads: string[] = [];
    for (let i = 0; i < MAX_REQUESTS_PER_CONNECTION; i++) {
      socket.write(createRequest(served().app.token, 800_000 + i, 'one at a time'));
      while (answerEnd(text) === -1 && !socket.closed) await once(socket, 'data').catch(() => undefined);
      heads.push(text.slice(0, text.indexOf('\r\n\r\n')));
      text = text.slice(answerEnd(text));
    }
    await closed;
    expect(heads.filter((head) => /\r\nconnection: close/i.test(head))).toEqual([heads[heads.length - 1]]);
    expect(heads.every((head) => head.startsWith('HTTP/1.1 200 '))).toBe(true);
  });
});

describe('a request sent once the last answer of its connection has begun', () => {
  // Short deadlines: only nothing moving ends this connection.
  const served = listeningTestApp(
    {},
    { limits: { headersMs: 500, requestMs: 60_000, idleMs: 600, requests: MAX_REQUESTS_PER_CONNECTION } },
  );

  it('is never run, and does not keep a connection whose client stopped reading', async () => {
    const accepted = once(served().app.server, 'connection') as Promise<[Socket]>;
    const socket = await open(served().port);
    const [ours] = await accepted;
    const bundles = 20; // ~30 MB of answers: more than the kernel holds for a client that stops reading
    const creates = MAX_REQUESTS_PER_CONNECTION - bundles;
    let text = '';
    const firstBundle = new Promise<void>((resolve) =>
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (text.split('HTTP/1.1 ').length > creates + 1) resolve();
      }),
    );
    socket.write(
      Array.from({ length: creates }, (_, i) => createRequest(served().app.token, 900_000 + i, 'p')).join('') +
        'GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(bundles),
    );
    await firstBundle; // every bundle's answer has begun by now: the last, the limit's, says close
    socket.pause();
    socket.write(createRequest(served().app.token, 999_999, 'past the last'));
    await once(ours, 'close');
    socket.destroy();
    expect(await served().app.storedPlant('999999')).toBeUndefined();
  });
});

describe('a connection that sends on past its last answer', () => {
  const served = listeningTestApp({}, { limits: { requests: MAX_REQUESTS_PER_CONNECTION } });

  it('is cut once it has sent as many requests again, read no further', async () => {
    const accepted = once(served().app.server, 'connection') as Promise<[Socket]>;
    const socket = await open(served().port);
    const [ours] = await accepted;
    socket.pause(); // reads no answer
    const creates = Array.from({ length: MAX_REQUESTS_PER_CONNECTION }, (_, i) =>
      createRequest(served().app.token, 950_000 + i, 'f'),
    );
    const flood = 'GET /plants HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(100_000); // 3.3 MB
    socket.write(creates.join('') + flood);
    await once(ours, 'close');
    socket.destroy();
    // Node's parser reads on after every request, and keeps each until the connection closes.
    expect(ours.bytesRead).toBeLessThan(flood.length / 4);
  });
});
