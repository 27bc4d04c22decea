import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository, SelectQueryBuilder } from 'typeorm';
import { GroupCommit, Store } from '../database/store';
import type { CreateOutcome } from '../observability/metrics';
import { PLANT_FIELDS, PlantEntity } from './plant.entity';

/** What storing a plant came to: stored now; the same plant stored already; another plant under its id. */
export type Outcome = CreateOutcome;

/** Bounds one statement's parameters (PostgreSQL allows 65,535) and one commit's work. */
const MAX_BATCH_SIZE = 1000;

/** Stored rows with their ids as decimal text on both stores: a JS number would round those past 2^53. */
function selectPlants(plants: Repository<PlantEntity>): SelectQueryBuilder<PlantEntity> {
  const query = plants.createQueryBuilder('plant').select('CAST(plant.id AS TEXT)', 'id');
  for (const field of PLANT_FIELDS) query.addSelect(`plant.${field}`, field);
  return query;
}

const sameFields = (a: PlantEntity, b: PlantEntity): boolean => PLANT_FIELDS.every((field) => a[field] === b[field]);

/** Numeric order of distinct decimal int64 ids (as BigInt: a JS number would round them). */
const byId = (a: PlantEntity, b: PlantEntity): number => (BigInt(a.id) < BigInt(b.id) ? -1 : 1);

/**
 * The plants the store keeps, on SQLite and PostgreSQL alike, over TypeORM's repository. Adds are
 * group-committed: those of one event-loop turn are decided and written in one transaction, in
 * the order they came, and each is answered once it is durable.
 */
@Injectable()
export class PlantsRepository {
  private readonly commits: GroupCommit<PlantEntity, Outcome>;
  /** The INSERT of each batch size, its text. */
  private readonly inserts = new Map<number, string>();

  constructor(
    @InjectRepository(PlantEntity) private readonly plants: Repository<PlantEntity>,
    store: Store,
  ) {
    this.commits = new GroupCommit(store, (batch, manager) => this.write(batch, manager), MAX_BATCH_SIZE);
  }

  /** Stores `plant` unless its id is taken; says whether it was, and by the same plant. Resolves once committed. */
  add(plant: PlantEntity): Promise<Outcome> {
    return this.commits.add(plant);
  }

  /** The plant stored under `id`, if one is. */
  async findById(id: string): Promise<PlantEntity | undefined> {
    return (await selectPlants(this.plants).where('plant.id = :id', { id }).getRawOne<PlantEntity>()) ?? undefined;
  }

  /** How many plants are stored. */
  count(): Promise<number> {
    return this.plants.count();
  }

  /** Every stored plant in id order, read a page at a time, so memory stays bounded. */
  async *all(pageSize = 1000): AsyncIterable<PlantEntity> {
    const page = (after?: string): Promise<PlantEntity[]> => {
      const query = selectPlants(this.plants).orderBy('plant.id').limit(pageSize);
      return (after === undefined ? query : query.where('plant.id > :after', { after })).getRawMany<PlantEntity>();
    };
    for (let rows = await page(); ; rows = await page(rows[rows.length - 1].id)) {
      yield* rows;
      if (rows.length < pageSize) return;
    }
  }

  /**
   * One batch, in its transaction: its plants inserted in id order, each id once (two instances
   * inserting the same new ids in different orders would each wait for the other), those whose
   * ids are taken skipped; then what is stored under those is read. A plant is judged as if the
   * batch's creates had come one after the other.
   */
  private async write(batch: readonly PlantEntity[], manager: EntityManager): Promise<Outcome[]> {
    const firsts = new Map<string, PlantEntity>();
    for (const plant of batch) if (!firsts.has(plant.id)) firsts.set(plant.id, plant);
    const rows = [...firsts.values()].sort(byId);
    const created = new Set(await this.insertNew(manager, rows));
    const taken = rows.filter((plant) => !created.has(plant.id)).map((plant) => plant.id);
    if (taken.length > 0) {
      const query = selectPlants(manager.withRepository(this.plants)).where('plant.id IN (:...taken)', { taken });
      for (const stored of await query.getRawMany<PlantEntity>()) firsts.set(stored.id, stored);
    }
    return batch.map((plant) => {
      const holder = firsts.get(plant.id)!;
      if (holder === plant) return 'created';
      return sameFields(holder, plant) ? 'replayed' : 'conflict';
    });
  }

  /**
   * The ids of `rows` inserted: SQL of both stores that TypeORM's query builder cannot write on
   * SQLite (RETURNING). Kept for each batch size up to 64: building it costs more than running it.
   */
  private async insertNew(manager: EntityManager, rows: readonly PlantEntity[]): Promise<string[]> {
    const { columns, tablePath } = this.plants.metadata;
    let sql = this.inserts.get(rows.length);
    if (sql === undefined) {
      const { driver } = manager.connection;
      const tuple = (row: number): string =>
        `(${columns.map((_, i) => driver.createParameter(`p${i}`, row * columns.length + i)).join(', ')})`;
      sql =
        `INSERT INTO ${driver.escape(tablePath)} (${columns.map((column) => driver.escape(column.databaseName)).join(', ')}) ` +
        `VALUES ${rows.map((_, row) => tuple(row)).join(', ')} ON CONFLICT DO NOTHING RETURNING CAST(id AS TEXT) AS id`;
      if (rows.length <= 64) this.inserts.set(rows.length, sql);
    }
    const inserted: { id: string }[] = await manager.query(
      sql,
      rows.flatMap((row) => columns.map((column): unknown => column.getEntityValue(row))),
    );
    return inserted.map((row) => row.id);
  }
}
