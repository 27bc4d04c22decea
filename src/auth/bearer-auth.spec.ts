import { setImmediate as nextTurn } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../config/configuration';
import { openStore } from '../database/open-store';
import { SQLITE } from '../database/sqlite/sqlite-kind';
import { Store } from '../database/store';
import { StoreOutage } from '../database/store-outage';
import { ENTITIES } from '../entities';
import { noMetrics } from '../observability/metrics';
import { ApiTokenEntity } from './api-token.entity';
import { BearerStrategy } from './bearer-auth';
import { TokensService } from './tokens.service';

describe('BearerStrategy, one turn of the event loop', () => {
  let dataSource: DataSource;
  let store: Store;
  let tokens: TokensService;
  let reads: jest.SpiedFunction<Store['read']>;
  let strategy: BearerStrategy;
  beforeAll(async () => {
    dataSource = await openStore(parseDatabaseUrl('sqlite::memory:'), ENTITIES);
    store = new Store(SQLITE, dataSource, new StoreOutage(noMetrics()), noMetrics(), {});
    tokens = new TokensService(dataSource.getRepository(ApiTokenEntity), store);
    strategy = new BearerStrategy(dataSource.getRepository(ApiTokenEntity), store, noMetrics());
  });
  beforeEach(async () => {
    await nextTurn(); // the tokens a test made are not read
    reads = jest.spyOn(store, 'read');
  });
  afterEach(() => reads.mockRestore());
  afterAll(() => dataSource.destroy());

  it('reads a token once for every request of the turn that carries it, and again the next turn', async () => {
    const alice = await tokens.create('alice');
    const answers = await Promise.all([alice, alice, alice].map((secret) => strategy.validate(secret)));
    expect(answers).toEqual([{ tokenName: 'alice' }, { tokenName: 'alice' }, { tokenName: 'alice' }]);
    expect(reads).toHaveBeenCalledTimes(1);
    await nextTurn();
    await tokens.revoke('alice');
    expect(await strategy.validate(alice)).toBe(false); // a revocation counts from the next turn
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it("reads each token of a turn at once on SQLite, where a read is an index probe (PostgreSQL's gather: one transaction)", async () => {
    expect(store.dialect.readsInTransaction).toBe(false);
    const secrets = await Promise.all(['a', 'b', 'c'].map((name) => tokens.create(name)));
    await nextTurn();
    const answers = await Promise.all(secrets.map((secret) => strategy.validate(secret)));
    expect(answers).toEqual([{ tokenName: 'a' }, { tokenName: 'b' }, { tokenName: 'c' }]);
    expect(reads).toHaveBeenCalledTimes(secrets.length);
  });

  it("reads a turn's tokens in one read where a read costs a transaction (as on PostgreSQL)", async () => {
    const outage = new StoreOutage(noMetrics());
    const transactional = new Store({ ...SQLITE, readsInTransaction: true }, dataSource, outage, noMetrics(), {});
    const gathered = new BearerStrategy(dataSource.getRepository(ApiTokenEntity), transactional, noMetrics());
    const secrets = await Promise.all(['d', 'e', 'f'].map((name) => tokens.create(name)));
    await nextTurn();
    const spy = jest.spyOn(transactional, 'read');
    const answers = await Promise.all(secrets.map((secret) => gathered.validate(secret)));
    expect(answers).toEqual([{ tokenName: 'd' }, { tokenName: 'e' }, { tokenName: 'f' }]);
    expect(spy).toHaveBeenCalledTimes(1);
  });
});
