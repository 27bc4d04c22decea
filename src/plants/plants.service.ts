import { isDeepStrictEqual } from 'node:util';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository, SelectQueryBuilder } from 'typeorm';
import type { GroupCommit } from '../database/group-commit';
import { Store } from '../database/store';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { Metrics } from '../observability/metrics';
import type { NewPlant, Plant } from './dto/plant.dto';
import { PLANT_FIELDS, PlantEntity } from './plant.entity';

export type Outcome = 'created' | 'replayed' | 'conflict';

/** The row a plant is stored as: its id as exact decimal text, an absent field as NULL. */
export function plantRow(plant: NewPlant): PlantEntity {
  const row: Record<string, unknown> = { id: plant.id.toString() };
  for (const field of PLANT_FIELDS) row[field] = plant[field] ?? null;
  return row as unknown as PlantEntity;
}

/** The answer to a create: the stored plant in its contract shape, a field only when it has a value. */
export function toPlant(row: PlantEntity): Plant {
  const plant: Record<string, unknown> = {};
  for (const field of PLANT_FIELDS) if (row[field] !== null) plant[field] = row[field];
  return plant as unknown as Plant;
}

const sameFields = (a: PlantEntity, b: PlantEntity): boolean => PLANT_FIELDS.every((field) => a[field] === b[field]);

/** Numeric order of distinct decimal int64 ids (as BigInt: a JS number would round them). */
const byId = (a: PlantEntity, b: PlantEntity): number => (BigInt(a.id) < BigInt(b.id) ? -1 : 1);

/** Stored rows with their ids as decimal text on both stores: a JS number would round those past 2^53. */
export function selectPlants(plants: Repository<PlantEntity>): SelectQueryBuilder<PlantEntity> {
  const query = plants.createQueryBuilder('plant').select('CAST(plant.id AS TEXT)', 'id');
  for (const field of PLANT_FIELDS) query.addSelect(`plant.${field}`, field);
  return query;
}

/** Rolls back a batch's first attempt: one of its ids is taken. */
class IdTaken extends Error {}

/** A batch's INSERT as the query builder writes it, skipping taken ids if told to. */
function insertQuery(
  plants: Repository<PlantEntity>,
  rows: PlantEntity[],
  { ignoreTaken }: { ignoreTaken: boolean },
): [string, unknown[]] {
  const query = plants.createQueryBuilder().insert().values(rows).updateEntity(false).callListeners(false);
  return (ignoreTaken ? query.orIgnore() : query).getQueryAndParameters();
}

/** Runs an INSERT; says how many rows it inserted (the query runner's structured result does; InsertResult does not). */
async function inserted(plants: Repository<PlantEntity>, [sql, parameters]: [string, unknown[]]): Promise<number> {
  const result = await plants.manager.queryRunner!.query(sql, parameters, true);
  return result.affected ?? 0;
}

/** Batches of up to this many rows reuse their INSERT: building one costs more than running it. */
const MAX_REUSED_ROWS = 64;

/** Bounds one statement's parameters (PostgreSQL allows 65,535) and one commit's work. */
const MAX_BATCH_SIZE = 1000;

@Injectable()
export class PlantsService {
  private readonly batches: GroupCommit<PlantEntity, Outcome>;
  /** The query builder's INSERT skipping taken ids, by row count. */
  private readonly inserts = new Map<number, string>();

  constructor(
    @InjectRepository(PlantEntity) private readonly plants: Repository<PlantEntity>,
    private readonly store: Store,
    private readonly metrics: Metrics,
  ) {
    this.batches = store.groupCommit((batch) => this.write(batch), MAX_BATCH_SIZE);
  }

  /** A taken id is a safe retry when the stored plant is the same (200), a conflict otherwise (409). */
  async create(plant: NewPlant): Promise<Plant> {
    const row = plantRow(plant);
    const outcome = await this.storeRow(row);
    this.metrics.created(outcome);
    if (outcome === 'conflict') throw new ApiError(ErrorCode.Conflict, `A different plant already has id ${row.id}`);
    return toPlant(row);
  }

  /** Decided by the primary key alone; resolves once durably committed. */
  storeRow(row: PlantEntity): Promise<Outcome> {
    return this.batches.enqueue(row);
  }

  /** Every stored plant in id order, read a page at a time, so memory stays bounded. */
  async *list(pageSize = 1000): AsyncIterable<PlantEntity> {
    let rows = await selectPlants(this.plants).orderBy('plant.id').limit(pageSize).getRawMany<PlantEntity>();
    for (;;) {
      yield* rows;
      if (rows.length < pageSize) return;
      const after = rows[rows.length - 1].id;
      rows = await selectPlants(this.plants)
        .where('plant.id > :after', { after })
        .orderBy('plant.id')
        .limit(pageSize)
        .getRawMany<PlantEntity>();
    }
  }

  /**
   * The batch in one transaction, its new rows inserted in id order (two instances inserting the
   * same new ids in different orders would each wait for the other). Most batches hold only new
   * ids: one INSERT takes them all. Else that attempt is rolled back, and the stored rows are read first.
   */
  private async write(batch: readonly PlantEntity[]): Promise<Outcome[]> {
    const first = new Map<string, PlantEntity>();
    for (const row of batch) if (!first.has(row.id)) first.set(row.id, row);
    const rows = [...first.values()].sort(byId);
    const outcomes = (taken: ReadonlyMap<string, PlantEntity>): Outcome[] =>
      batch.map((row) => {
        const held = taken.get(row.id) ?? first.get(row.id)!;
        if (held === row) return 'created';
        return sameFields(held, row) ? 'replayed' : 'conflict';
      });
    try {
      return await this.store.transaction(this.plants, async (plants) => {
        if ((await inserted(plants, this.insertNew(plants, rows))) < rows.length) throw new IdTaken();
        return outcomes(new Map());
      });
    } catch (error) {
      if (!(error instanceof IdTaken)) throw error;
    }
    return this.store.transaction(this.plants, async (plants) => {
      const ids = rows.map((row) => row.id);
      const stored = await selectPlants(plants).where('plant.id IN (:...ids)', { ids }).getRawMany<PlantEntity>();
      const taken = new Map(stored.map((row) => [row.id, row]));
      const added = rows.filter((row) => !taken.has(row.id));
      // An id another instance takes meanwhile fails the insert, and the batch is tried again.
      if (added.length > 0) await inserted(plants, insertQuery(plants, added, { ignoreTaken: false }));
      return outcomes(taken);
    });
  }

  /**
   * The INSERT skipping taken ids. A kept one is given its values in the order its parameters
   * stand, row by row, each in column order: kept only once that order gave the builder's own.
   */
  private insertNew(plants: Repository<PlantEntity>, rows: PlantEntity[]): [string, unknown[]] {
    const columns = plants.metadata.columns;
    const parameters = (): unknown[] =>
      rows.flatMap((row) => columns.map((column): unknown => column.getEntityValue(row)));
    const kept = this.inserts.get(rows.length);
    if (kept !== undefined) return [kept, parameters()];
    const query = insertQuery(plants, rows, { ignoreTaken: true });
    const reusable = rows.length <= MAX_REUSED_ROWS && isDeepStrictEqual(query[1], parameters());
    if (reusable) this.inserts.set(rows.length, query[0]);
    return query;
  }
}
