import type { Outcome } from './create-outcome';
import type { Plant } from './plant.entity';

export const PLANT_STORE = Symbol('PlantStore');

/**
 * Where plants are kept. One implementation per store (`stores/`), chosen once at module wiring.
 * Failures of the store itself reject with StoreUnavailableError.
 */
export interface PlantStore {
  /**
   * Inserts the plant unless its id is taken, deciding by the primary key alone, and resolves
   * once the outcome is durably committed: `created`, `replayed` (the same plant was already
   * there) or `conflict` (another plant has the id; nothing changed).
   */
  create(plant: Plant): Promise<Outcome>;

  /** Every stored plant in id order, read in pages of `pageSize`, so memory stays bounded. */
  list(pageSize?: number): AsyncIterable<Plant>;
}
