import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'api_token' })
export class ApiTokenEntity {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id!: number;

  @Column({ type: 'varchar', length: 100, unique: true })
  name!: string;

  @Column({ name: 'token_hash', type: 'varchar', length: 64, unique: true })
  tokenHash!: string;

  /** ISO-8601 UTC; text so that both stores keep it identically. */
  @Column({ name: 'created_at', type: 'varchar', length: 32 })
  createdAt!: string;

  @Column({ name: 'revoked_at', type: 'varchar', length: 32, nullable: true })
  revokedAt!: string | null;
}
