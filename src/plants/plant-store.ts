import { PLANT_FIELDS, type PlantEntity } from './plant.entity';

export type Outcome = 'created' | 'replayed' | 'conflict';

export abstract class PlantStore {
  /** Decided by the primary key alone; resolves once durably committed. */
  abstract create(plant: PlantEntity): Promise<Outcome>;

  /** Every stored plant in id order, read in pages, so memory stays bounded. */
  abstract list(pageSize?: number): AsyncIterable<PlantEntity>;
}

/** The duplicate rule, for a create whose id is taken: the same plant is a safe retry, else a conflict. */
export function duplicateOutcome(row: PlantEntity, stored: Omit<PlantEntity, 'id'> | null | undefined): Outcome {
  if (stored === null || stored === undefined) throw new Error(`plant ${row.id} neither inserted nor found`);
  return PLANT_FIELDS.every((field) => stored[field] === row[field]) ? 'replayed' : 'conflict';
}
