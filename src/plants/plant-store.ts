import type { Outcome } from './create-outcome';
import type { PlantEntity } from './plant.entity';

/**
 * Where plants are kept, and the DI token for it: one implementation per store (`stores/`),
 * chosen once at module wiring (storeProvider). Failures of the store itself reject with
 * StoreUnavailableError.
 */
export abstract class PlantStore {
  /**
   * Inserts the plant unless its id is taken, deciding by the primary key alone, and resolves
   * once the outcome is durably committed: `created`, `replayed` (the same plant was already
   * there) or `conflict` (another plant has the id; nothing changed).
   */
  abstract create(plant: PlantEntity): Promise<Outcome>;

  /** Every stored plant in id order, read in pages of `pageSize`, so memory stays bounded. */
  abstract list(pageSize?: number): AsyncIterable<PlantEntity>;
}
