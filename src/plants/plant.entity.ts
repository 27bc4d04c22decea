import { Column, Entity, getMetadataArgsStorage, PrimaryColumn } from 'typeorm';
import type { NewPlant } from './dto/plant.dto';

/** The id is kept as its exact decimal string: the drivers bind it to BIGINT without a JS number. */
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

/** Read from the entity, so a new column needs no code here. */
export const PLANT_FIELDS: readonly PlantField[] = getMetadataArgsStorage()
  .columns.filter((column) => column.target === PlantEntity && column.propertyName !== 'id')
  .map((column) => column.propertyName as PlantField);
