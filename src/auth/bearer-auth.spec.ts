import { setImmediate as nextTurn } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../config/configuration';
import { openStore, storeOf } from '../database/open-store';
import { SQLITE } from '../database/sqlite/sqlite-kind';
import { Store } from '../database/store';
import { StoreOutage } from '../database/store-outage';
import { ENTITIES } from '../entities';
import { Metrics } from '../observability/metrics';
import { ApiTokenEntity } from './api-token.entity';
import { BearerStrategy, hashToken } from './bearer-auth';
import { TokensService } from './tokens.service';

describe('BearerStrategy, one turn of the event loop', () => {
  let dataSource: DataSource;
  let tokens: TokensService;
  let reads: jest.SpiedFunction<TokensService['findByHashes']>;
  let strategy: BearerStrategy;
  beforeAll(async () => {
    dataSource = await openStore(parseDatabaseUrl('sqlite::memory:'), ENTITIES);
    tokens = new TokensService(dataSource.getRepository(ApiTokenEntity), storeOf(dataSource));
    strategy = new BearerStrategy(tokens, new Metrics(false));
  });
  beforeEach(() => {
    reads = jest.spyOn(tokens, 'findByHashes');
  });
  afterEach(() => reads.mockRestore());
  afterAll(() => dataSource.destroy());

  const readHashes = (): string[][] => reads.mock.calls.map(([hashes]) => [...hashes]);

  it('reads a token once for every request of the turn that carries it, and again the next turn', async () => {
    const alice = await tokens.create('alice');
    const answers = await Promise.all([alice, alice, alice].map((secret) => strategy.validate(secret)));
    expect(answers).toEqual([{ tokenName: 'alice' }, { tokenName: 'alice' }, { tokenName: 'alice' }]);
    expect(readHashes()).toEqual([[hashToken(alice)]]);
    await nextTurn();
    await tokens.revoke('alice');
    expect(await strategy.validate(alice)).toBe(false); // a revocation counts from the next turn
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it("reads each token of a turn at once on SQLite, where a read is an index probe (PostgreSQL's gather: one transaction)", async () => {
    expect(tokens.gathersATurn).toBe(false);
    const secrets = await Promise.all(['a', 'b', 'c'].map((name) => tokens.create(name)));
    await nextTurn();
    const answers = await Promise.all(secrets.map((secret) => strategy.validate(secret)));
    expect(answers).toEqual([{ tokenName: 'a' }, { tokenName: 'b' }, { tokenName: 'c' }]);
    expect(readHashes()).toEqual(secrets.map((secret) => [hashToken(secret)]));
  });

  it("reads a turn's tokens in one read where a read costs a transaction (as on PostgreSQL)", async () => {
    const transactional = new Store({ ...SQLITE, readsInTransaction: true }, new StoreOutage());
    const gathering = new TokensService(dataSource.getRepository(ApiTokenEntity), transactional);
    const gathered = new BearerStrategy(gathering, new Metrics(false));
    const secrets = await Promise.all(['d', 'e', 'f'].map((name) => gathering.create(name)));
    await nextTurn();
    const spy = jest.spyOn(gathering, 'findByHashes');
    const answers = await Promise.all(secrets.map((secret) => gathered.validate(secret)));
    expect(answers).toEqual([{ tokenName: 'd' }, { tokenName: 'e' }, { tokenName: 'f' }]);
    expect(spy.mock.calls.map(([hashes]) => [...hashes])).toEqual([secrets.map(hashToken)]);
  });
});
