import { connect } from 'node:net';
import { holdPlantTable } from '../support/databases';
import { createRequest } from '../support/raw-http';
import { sleep } from '../support/sockets';
import { startTestApp, type TestApp } from '../support/app';

/**
 * A client that goes away before its answer: the request still runs to its end (a create still
 * commits), and it gets one log line, which says so; a line with a status tells the truth.
 */
describe('a client gone before its answer', () => {
  let t: TestApp;
  let port: number;
  const log: string[] = [];
  beforeAll(async () => {
    t = await startTestApp({}, { log });
    port = await t.listen();
  });
  afterAll(() => t.close());

  it('is logged once, saying so, and a create logged 200 is stored', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => 5_000 + i);
    // The store is held while the creates arrive and their clients reset.
    const release = await holdPlantTable(t.databaseUrl);
    await Promise.all(
      ids.map(
        (id) =>
          new Promise<void>((resolve) => {
            const socket = connect(port, '127.0.0.1');
            socket.on('error', () => undefined);
            socket.on('close', () => resolve());
            const request = createRequest(t.token, id, `gone ${id}`).replace(
              'Host: x\r\n',
              `Host: x\r\nX-Request-Id: gone-${id}\r\n`,
            );
            socket.write(request, () => setTimeout(() => socket.resetAndDestroy(), 20));
          }),
      ),
    );
    await release();
    const linesFor = (id: number) => log.filter((line) => line.includes(`"requestId":"gone-${id}"`));
    while (ids.some((id) => linesFor(id).length === 0)) await sleep(50);
    await sleep(200); // the creates still running commit meanwhile
    for (const id of ids) {
      const lines = linesFor(id);
      expect({ id, lines: lines.length }).toEqual({ id, lines: 1 });
      if (lines[0].includes('"res":{"status":200}')) expect(await t.storedPlant(String(id))).toBeDefined();
    }
    expect(ids.filter((id) => linesFor(id)[0].includes('"clientClosed":true')).length).toBeGreaterThan(0);
  });
});
