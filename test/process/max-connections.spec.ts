/**
 * @slow 4 s: a server with 256 descriptors and 300 clients at once
 */
import { fileDatabase } from '../support/databases';
import { answerEnd, answers, createRequest } from '../support/raw-http';
import { createToken, startServerWithDescriptors, stopServer } from '../support/server-process';
import { open, sleep } from '../support/sockets';

/**
 * Client connections never starve the store: a process exposed directly with few descriptors
 * accepts clients only up to its limit less what the store, the log and the listeners need, so
 * that a PostgreSQL pool can always open its connections. A client past that is not accepted
 * (the proxy's queue is where it waits); every client accepted gets its answer, and the log says
 * once what to raise.
 */
describe('a server with 256 descriptors and 300 clients at once', () => {
  const database = fileDatabase();

  it('answers every client it accepted 200, declares no outage, stays ready', async () => {
    const token = await createToken(database().url, 'max-connections');
    const server = await startServerWithDescriptors({ DATABASE_URL: database().url }, 256);
    try {
      // Every client connects first, then all send a create and keep their connection open
      // (kept alive) until every one has its answer or was refused: they are all open at once.
      const sockets = await Promise.all(Array.from({ length: 300 }, () => open(server.port)));
      const replies = await Promise.all(
        sockets.map(
          (socket, i) =>
            new Promise<string>((resolve) => {
              let reply = '';
              socket.on('data', (chunk: Buffer) => {
                reply += chunk.toString();
                if (answerEnd(reply) !== -1) resolve(reply);
              });
              socket.on('error', () => undefined);
              socket.on('close', () => resolve(reply));
              socket.write(createRequest(token, 1 + i, `client ${i}`));
            }),
        ),
      );
      sockets.forEach((socket) => socket.destroy());
      const answered = replies.filter((reply) => reply !== '');
      expect(answered.length).toBeGreaterThanOrEqual(100);
      expect(answered.flatMap((reply) => answers(reply).map((answer) => answer.code))).toEqual(answered.map(() => 200));
      // The server may not have seen every client go yet: until it has, a new connection may be refused.
      let ready: number | string = 'refused';
      for (let tries = 0; ready === 'refused' && tries < 500; tries++) {
        ready = await fetch(`${server.url}/health/ready`).then(
          (response) => response.status,
          async () => sleep(20).then(() => 'refused'),
        );
      }
      expect(ready).toBe(200);
      expect(server.output()).not.toContain('store outage started');
      // The line is written off the event loop: it may follow the answers (waited for 30 s at most).
      const refusal = /"context":"Connections".*refused a connection/;
      for (let waited = 0; !refusal.test(server.output()) && waited < 30_000; waited += 20) await sleep(20);
      const refusals = server
        .output()
        .split('\n')
        .filter((line) => refusal.test(line));
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toContain('raise it');
    } finally {
      await stopServer(server);
    }
  });
});
