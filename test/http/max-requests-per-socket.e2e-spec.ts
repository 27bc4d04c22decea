import { answers, createRequest, exchange } from '../support/raw-http';
import { listeningTestApp } from '../support/app';
import { MAX_REQUESTS_PER_CONNECTION } from '../../src/http/http-server';

/**
 * A connection serves 1,000 requests. The first request past that is answered in the contract
 * (503, `Retry-After`, `X-Request-Id`) and closes the connection; nothing after it runs.
 */
describe('requests past a connection limit', () => {
  const served = listeningTestApp();

  it('answers 1,000 pipelined creates, then 503 in the contract, and runs nothing more', async () => {
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
    expect(JSON.parse(last.body)).toEqual({ error: 503, message: expect.stringContaining('new connection') });
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
});
