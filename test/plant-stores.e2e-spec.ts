import type { DataSource } from 'typeorm';
import type { PlantEntity } from '../src/plants/plant.entity';
import { type Outcome, PlantsRepository } from '../src/plants/plants.repository';
import { freshDatabase, testStoreKind, type TestDatabase } from './support/databases';
import { plantsTestingModule, type PlantsTesting } from './support/plants-module';

/**
 * The plants repository on the store that `npm test` (SQLite) or `npm run test:postgres`
 * (PostgreSQL) runs on: its group commit decides every create of a batch exactly as if they had
 * come one after the other, and commits all of it or none.
 */
describe(`the ${testStoreKind()} plant store`, () => {
  let database: TestDatabase;
  let testing: PlantsTesting;
  let dataSource: DataSource;
  let store: PlantsRepository;
  beforeAll(async () => {
    database = await freshDatabase();
    testing = await plantsTestingModule(database);
    dataSource = testing.dataSource;
    store = testing.module.get(PlantsRepository);
  });
  afterAll(async () => {
    await testing.close();
    await database.drop();
  });

  // As a create makes its row: a field the plant lacks is NULL.
  const plant = (id: string, name: string, tag: string | null = null): PlantEntity => ({ id, name, tag });
  const stored = async (id: string): Promise<unknown[]> =>
    dataSource.query(`SELECT CAST(id AS TEXT) AS id, name, tag FROM plant WHERE id = ${id}`);

  it('decides duplicates inside one batch in arrival order', async () => {
    // Called in one turn of the event loop: one batch.
    const outcomes: Array<Promise<Outcome>> = [
      store.add(plant('9007199254740993', 'first')),
      store.add(plant('9007199254740993', 'first')),
      store.add(plant('9007199254740993', 'second')),
      store.add(plant('9007199254740992', 'neighbour', 'n')),
      store.add(plant('9007199254740992', 'neighbour', null)),
    ];
    expect(await Promise.all(outcomes)).toEqual(['created', 'replayed', 'conflict', 'created', 'conflict']);
    expect(await stored('9007199254740993')).toEqual([{ id: '9007199254740993', name: 'first', tag: null }]);
    expect(await stored('9007199254740992')).toEqual([{ id: '9007199254740992', name: 'neighbour', tag: 'n' }]);
  });

  it('judges a batch against plants stored before it', async () => {
    await store.add(plant('77', 'earlier', 'x'));
    const outcomes = await Promise.all([
      store.add(plant('77', 'earlier', 'x')),
      store.add(plant('77', 'earlier', 'y')),
      store.add(plant('78', 'new')),
    ]);
    expect(outcomes).toEqual(['replayed', 'conflict', 'created']);
  });

  it('rejects the whole batch when its commit fails, and stores none of it', async () => {
    // A trigger that refuses one plant: the statement (PostgreSQL) or the transaction (SQLite)
    // carrying the batch fails half-way.
    if (testStoreKind() === 'postgres') {
      await dataSource.query(
        `CREATE FUNCTION refuse_poison() RETURNS trigger AS $$ BEGIN IF NEW.name = 'poison' THEN RAISE EXCEPTION 'poison'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`,
      );
      await dataSource.query(
        'CREATE TRIGGER refuse_poison BEFORE INSERT ON plant FOR EACH ROW EXECUTE FUNCTION refuse_poison()',
      );
    } else {
      await dataSource.query(
        `CREATE TRIGGER refuse_poison BEFORE INSERT ON plant WHEN NEW.name = 'poison' BEGIN SELECT RAISE(ABORT, 'poison'); END`,
      );
    }
    try {
      const results = await Promise.allSettled([
        store.add(plant('501', 'before')),
        store.add(plant('502', 'poison')),
        store.add(plant('503', 'after')),
      ]);
      expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
      for (const id of ['501', '502', '503']) expect(await stored(id)).toEqual([]);
    } finally {
      await dataSource.query(
        testStoreKind() === 'postgres' ? 'DROP TRIGGER refuse_poison ON plant' : 'DROP TRIGGER refuse_poison',
      );
    }
    // The next batch is not affected.
    expect(await store.add(plant('501', 'before'))).toBe('created');
  });

  it('decides the same ids sent at once by two instances in opposite orders, never failing either', async () => {
    // Two instances each inserting a batch of the same new ids, one ascending and one
    // descending: inserting them in the order they came would deadlock on PostgreSQL (each
    // waiting for the other's uncommitted rows), and one batch would fail.
    const other = await plantsTestingModule(database);
    try {
      const otherStore = other.module.get(PlantsRepository);
      for (let round = 0; round < 5; round++) {
        const ids = Array.from({ length: 200 }, (_, i) => String(10_000 + round * 1_000 + i));
        const [up, down] = await Promise.all([
          Promise.all(ids.map((id) => store.add(plant(id, 'both')))),
          Promise.all([...ids].reverse().map((id) => otherStore.add(plant(id, 'both')))),
        ]);
        const byId = new Map(ids.map((id, i) => [id, [up[i], down[ids.length - 1 - i]].sort()]));
        for (const outcomes of byId.values()) expect(outcomes).toEqual(['created', 'replayed']);
      }
    } finally {
      await other.close();
    }
  });

  it('lists every plant once, in id order, page by page', async () => {
    const seen: string[] = [];
    for await (const row of store.all(2)) seen.push(row.id);
    expect(seen).toEqual([...seen].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(['77', '78', '501', '9007199254740992', '9007199254740993']));
  });
});
