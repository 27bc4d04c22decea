import { setImmediate as nextTurn } from 'node:timers/promises';
import { Metrics } from '../observability/metrics';
import { BearerStrategy, generateToken, hashToken } from './bearer-auth';
import { type TokenRecord, TokenStore } from './token-store';

/** A store that answers from a map, and remembers each read it was asked for. */
class CountingStore extends TokenStore {
  readonly reads: string[][] = [];
  readonly records = new Map<string, TokenRecord>();

  constructor(readonly gathersATurn: boolean) {
    super();
  }

  findByHashes(hashes: readonly string[]): Promise<ReadonlyMap<string, TokenRecord>> {
    this.reads.push([...hashes]);
    return Promise.resolve(
      new Map(hashes.flatMap((hash) => (this.records.has(hash) ? [[hash, this.records.get(hash)!]] : []))),
    );
  }
}

/** A new token named `name`, stored active. */
function token(store: CountingStore, name: string): string {
  const secret = generateToken();
  store.records.set(hashToken(secret), { name, revokedAt: null });
  return secret;
}

describe('BearerStrategy, one turn of the event loop', () => {
  it('reads a token once for every request of the turn that carries it, and again the next turn', async () => {
    const store = new CountingStore(false);
    const strategy = new BearerStrategy(store, new Metrics(false));
    const alice = token(store, 'alice');
    const answers = await Promise.all([alice, alice, alice].map((secret) => strategy.validate(secret)));
    expect(answers).toEqual([{ tokenName: 'alice' }, { tokenName: 'alice' }, { tokenName: 'alice' }]);
    expect(store.reads).toEqual([[hashToken(alice)]]);
    await nextTurn();
    store.records.set(hashToken(alice), { name: 'alice', revokedAt: '2026-11-26T00:00:00.000Z' });
    expect(await strategy.validate(alice)).toBe(false); // a revocation counts from the next turn
    expect(store.reads).toHaveLength(2);
  });

  it("reads each token at once on a store that does not gather, and a turn's tokens in one read on one that does", async () => {
    for (const gathers of [false, true]) {
      const store = new CountingStore(gathers);
      const strategy = new BearerStrategy(store, new Metrics(false));
      const secrets = [token(store, 'a'), token(store, 'b'), token(store, 'c')];
      await Promise.all(secrets.map((secret) => strategy.validate(secret)));
      expect(store.reads).toEqual(gathers ? [secrets.map(hashToken)] : secrets.map((secret) => [hashToken(secret)]));
      await nextTurn();
    }
  });
});
