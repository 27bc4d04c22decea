import type { MigrationInterface } from 'typeorm';

/** A migration of the store, with what an operator must know before reverting it. */
export interface StoreMigration extends MigrationInterface {
  /** The tables whose rows its `down` throws away: `store.js revert` counts them first. */
  readonly revertDrops: readonly string[];
}
