import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A stored plant. The id is the client's int64, kept as its exact decimal string: the drivers
 * bind it to a BIGINT column without ever passing through a JS number, and PostgreSQL's
 * driver hands bigint back as a string anyway.
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
