import { PLANT_FIELDS, type PlantEntity } from './plant.entity';

export type Outcome = 'created' | 'replayed' | 'conflict';

/**
 * The duplicate rule, for a create whose insert found its id taken: the same plant (every field
 * equal) is a safe retry, anything else a conflict. The blocking row cannot be gone: plants are
 * never deleted.
 */
export function duplicateOutcome(row: PlantEntity, stored: Omit<PlantEntity, 'id'> | null | undefined): Outcome {
  if (stored === null || stored === undefined) throw new Error(`plant ${row.id} neither inserted nor found`);
  return PLANT_FIELDS.every((field) => stored[field] === row[field]) ? 'replayed' : 'conflict';
}
