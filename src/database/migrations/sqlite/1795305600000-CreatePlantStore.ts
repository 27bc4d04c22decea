import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Generated; WITHOUT ROWID, the primary key is the table. Named as the PostgreSQL one: one schema version. */
export class CreatePlantStoreSqlite1795305600000 implements MigrationInterface {
  name = 'CreatePlantStore1795305600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "api_token" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "name" varchar(100) NOT NULL, "token_hash" varchar(64) NOT NULL, "created_at" varchar(32) NOT NULL, "revoked_at" varchar(32), CONSTRAINT "UQ_8b2c31d18cfaa1f93b4c9f142b5" UNIQUE ("name"), CONSTRAINT "UQ_bafaa5aab5957cd193fb2da8f24" UNIQUE ("token_hash"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "plant" ("id" bigint PRIMARY KEY NOT NULL, "name" text NOT NULL, "tag" text) WITHOUT ROWID`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "plant"`);
    await queryRunner.query(`DROP TABLE "api_token"`);
  }
}
