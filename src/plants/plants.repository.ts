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
export function selectPlants(plants: Repository<PlantEntity>): SelectQueryBuilder<PlantEntity> {
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
   * One batch, in its transaction: what is stored under its ids is read, then its new plants are
   * inserted, in id order (two instances inserting the same new ids in different orders would each
   * wait for the other). On PostgreSQL another instance may insert one of them meanwhile: the
   * insert fails on the key, nothing is written, and the batch is tried again (the store's busy case).
   */
  private async write(batch: readonly PlantEntity[], manager: EntityManager): Promise<Outcome[]> {
    const plants = manager.withRepository(this.plants);
    const ids = [...new Set(batch.map((plant) => plant.id))];
    const stored = await selectPlants(plants).where('plant.id IN (:...ids)', { ids }).getRawMany<PlantEntity>();
    const holders = new Map(stored.map((plant) => [plant.id, plant]));
    const added: PlantEntity[] = [];
    const outcomes = batch.map((plant): Outcome => {
      const holder = holders.get(plant.id);
      if (holder === undefined) {
        holders.set(plant.id, plant);
        added.push(plant);
        return 'created';
      }
      return sameFields(holder, plant) ? 'replayed' : 'conflict';
    });
    if (added.length > 0) await plants.insert(added.sort(byId));
    return outcomes;
  }
}
