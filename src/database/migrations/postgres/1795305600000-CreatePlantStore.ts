import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Generated; keyed by the client's int64 id. Named as the SQLite one: one schema version, two dialects. */
export class CreatePlantStorePostgres1795305600000 implements MigrationInterface {
  name = 'CreatePlantStore1795305600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "api_token" ("id" SERIAL NOT NULL, "name" character varying(100) NOT NULL, "token_hash" character varying(64) NOT NULL, "created_at" character varying(32) NOT NULL, "revoked_at" character varying(32), CONSTRAINT "UQ_8b2c31d18cfaa1f93b4c9f142b5" UNIQUE ("name"), CONSTRAINT "UQ_bafaa5aab5957cd193fb2da8f24" UNIQUE ("token_hash"), CONSTRAINT "PK_d862311c568d175c26f41bc6f98" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "plant" ("id" bigint NOT NULL, "name" text NOT NULL, "tag" text, CONSTRAINT "PK_97e1eb0d045aadea59401ece5ba" PRIMARY KEY ("id"))`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "plant"`);
    await queryRunner.query(`DROP TABLE "api_token"`);
  }
}
