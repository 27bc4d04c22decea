import { answers, exchange } from '../support/raw-http';
import { listeningTestApp } from '../support/app';

/**
 * An unknown property is never walked, whatever its shape: a body that nests 3,000 arrays
 * deep beside an id that needs its exact source text (past 2^53, a 0, or any 17-digit run in
 * the body) is a create like any other.
 */
describe('an unknown property nested deep', () => {
  const served = listeningTestApp();

  const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const create = (body: string) =>
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${served().app.token}\r\nContent-Type: application/json\r\n` +
    `Connection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

  it.each([
    ['an id past 2^53', '4000000000000003000', ''],
    ['an id of 0', '0', ''],
    ['a 17-digit run elsewhere', '3000', ',"y":"12345678901234567"'],
    ['an id past 2^53 written with an exponent', '4.000000000000003001e18', ''],
  ])('creates the plant: %s beside 3,000 nested arrays', async (_, id, extra) => {
    const name = `deep ${id}`;
    const { reply } = await exchange(served().port, create(`{"id":${id},"name":"${name}","x":${deep(3_000)}${extra}}`));
    expect(answers(reply).map((answer) => answer.body)).toEqual([JSON.stringify({ name })]);
    const exact = id.includes('e') ? 4000000000000003001n.toString() : id;
    expect(await served().app.storedPlant(exact)).toMatchObject({ id: exact, name });
  });

  it('reads the last of a repeated id, as JSON.parse does, past nested values', async () => {
    const body = `{"id":1,"x":{"id":2,"a":${deep(3_000)}},"name":"last","id":9007199254740993}`;
    const { reply } = await exchange(served().port, create(body));
    expect(answers(reply).map((answer) => answer.body)).toEqual(['{"name":"last"}']);
    expect(await served().app.storedPlant('9007199254740993')).toMatchObject({ name: 'last' });
  });
});
