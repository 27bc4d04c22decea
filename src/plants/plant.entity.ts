import { Column, Entity, getMetadataArgsStorage, PrimaryColumn } from 'typeorm';
import type { NewPlant } from './dto/new-plant.dto';

/**
 * A stored plant. The id is the client's int64, kept as its exact decimal string: the drivers
 * bind it to a BIGINT column without ever passing through a JS number, and PostgreSQL's
 * driver hands bigint back as a string anyway. A field a plant may lack is NULL.
 */
@Entity({ name: 'plant', withoutRowid: true })
export class PlantEntity {
  @PrimaryColumn({ type: 'bigint' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  tag!: string | null;
}

/** A plant's fields besides its id: a column here and a property of NewPlant alike. */
export type PlantField = Exclude<keyof PlantEntity & keyof NewPlant, 'id'>;

/**
 * The columns after the id, in the entity's order, with their types: what the stores write,
 * read back and compare, and what the answer and an export hold. Read from the entity, so that a
 * new column needs no code here.
 */
export const PLANT_COLUMNS: readonly { field: PlantField; type: string }[] = getMetadataArgsStorage()
  .columns.filter((column) => column.target === PlantEntity && column.propertyName !== 'id')
  .map((column) => ({ field: column.propertyName as PlantField, type: String(column.options.type) }));

export const PLANT_FIELDS: readonly PlantField[] = PLANT_COLUMNS.map((column) => column.field);
