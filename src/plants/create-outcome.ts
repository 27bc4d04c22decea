import type { PlantEntity } from './plant.entity';

export type Outcome = 'created' | 'replayed' | 'conflict';

/**
 * The duplicate rule, for a create whose insert found its id taken: the same plant is a safe
 * retry, anything else a conflict. The blocking row cannot be gone: plants are never deleted.
 */
export function duplicateOutcome(
  row: PlantEntity,
  stored: Pick<PlantEntity, 'name' | 'tag'> | null | undefined,
): Outcome {
  if (stored === null || stored === undefined) throw new Error(`plant ${row.id} neither inserted nor found`);
  return stored.name === row.name && stored.tag === row.tag ? 'replayed' : 'conflict';
}
