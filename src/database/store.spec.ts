import { setImmediate as nextTurn } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { ApiTokenEntity } from '../auth/api-token.entity';
import { parseDatabaseUrl } from '../config/configuration';
import { ENTITIES } from '../entities';
import { StoreUnavailableError } from '../errors/api-error';
import { noMetrics } from '../observability/metrics';
import { openStore } from './open-store';
import { SQLITE } from './sqlite/sqlite-kind';
import { Store } from './store';
import { StoreOutage } from './store-outage';

const token = (name: string) => ({ name, tokenHash: name.padEnd(64, '0'), createdAt: 'now', revokedAt: null });

describe('Store on SQLite', () => {
  let dataSource: DataSource;
  let store: Store;
  let outage: StoreOutage;
  beforeEach(async () => {
    dataSource = await openStore(parseDatabaseUrl('sqlite::memory:'), ENTITIES);
    outage = new StoreOutage(noMetrics());
    store = new Store(SQLITE, dataSource, outage, noMetrics(), {});
  });
  afterEach(() => dataSource.destroy());

  const tokens = () => dataSource.getRepository(ApiTokenEntity);

  it('runs transactions begun together one after the other on its one connection: each commits or rolls back alone', async () => {
    const failing = store.transaction(async (manager) => {
      await manager.withRepository(tokens()).insert(token('rolled-back'));
      await nextTurn(); // the other transaction has begun meanwhile, and must not be inside this one
      throw new Error('refused');
    });
    const committing = store.transaction(async (manager) => {
      await manager.withRepository(tokens()).insert(token('kept'));
    });
    await expect(failing).rejects.toThrow('refused');
    await committing;
    expect((await tokens().find()).map((row) => row.name)).toEqual(['kept']);
  });

  it('answers a read of a table that is gone as the store unavailable, and notes the outage', async () => {
    await dataSource.query('DROP TABLE "api_token"');
    await expect(store.read((manager) => manager.withRepository(tokens()).find())).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(outage.active).toBe(true);
  });
});
