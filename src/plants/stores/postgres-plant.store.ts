import type { DataSource } from 'typeorm';
import { GroupCommit } from '../../database/group-commit';
import { boundedQuery, postgresClient, postgresFailure, withPooledClient } from '../../database/postgres/connection';
import type { StoreOutage } from '../../database/store-outage';
import { duplicateOutcome, type Outcome, type PlantStore } from '../plant-store';
import { PLANT_COLUMNS, type PlantEntity } from '../plant.entity';

const FIELDS = PLANT_COLUMNS.map(({ field }) => `"${field}"`).join(', ');
const ARRAYS = PLANT_COLUMNS.map(({ type }, i) => `$${i + 2}::${type}[]`).join(', ');

/** Ids already taken are skipped by the primary key and left out of RETURNING; ids travel as text. */
const INSERT =
  `INSERT INTO "plant" ("id", ${FIELDS}) SELECT * FROM unnest($1::bigint[], ${ARRAYS}) ` +
  'ON CONFLICT DO NOTHING RETURNING "id"::text AS "id"';

const SELECT = `SELECT "id"::text AS "id", ${FIELDS} FROM "plant"`;
const SELECT_TAKEN = `${SELECT} WHERE "plant"."id" = ANY($1::bigint[])`;
// "plant"."id", the bigint column: a bare "id" in ORDER BY would be the text alias, in text order.
const PAGE = `${SELECT} WHERE "plant"."id" > $1::bigint ORDER BY "plant"."id" LIMIT $2`;
const FIRST_PAGE = `${SELECT} ORDER BY "plant"."id" LIMIT $1`;

/** Numeric order of distinct decimal int64 ids (as BigInt: a JS number would round them). */
const byId = (a: PlantEntity, b: PlantEntity): number => (BigInt(a.id) < BigInt(b.id) ? -1 : 1);

/** Batches written at once: pipelining on the pool (10 connections) without starving lookups. */
const MAX_BATCHES_IN_FLIGHT = 4;
const MAX_BATCH_SIZE = 1000;

/** A batch is one INSERT … ON CONFLICT DO NOTHING; the ids it skipped are read back in one SELECT. */
export class PostgresPlantStore implements PlantStore {
  private readonly batches: GroupCommit<PlantEntity, Outcome>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {
    this.batches = new GroupCommit({
      write: (batch) => this.write(batch),
      outage,
      maxBatchSize: MAX_BATCH_SIZE,
      maxInFlight: MAX_BATCHES_IN_FLIGHT,
    });
  }

  create(row: PlantEntity): Promise<Outcome> {
    return this.batches.enqueue(row);
  }

  async *list(pageSize = 1000): AsyncIterable<PlantEntity> {
    const client = await this.outage.watch(postgresClient(this.dataSource));
    try {
      const page = async (sql: string, values: unknown[]): Promise<PlantEntity[]> => {
        try {
          return (await boundedQuery<PlantEntity>(client, { text: sql, values })).rows;
        } catch (error) {
          throw postgresFailure(error);
        }
      };
      let rows = await page(FIRST_PAGE, [pageSize]);
      for (;;) {
        yield* rows;
        if (rows.length < pageSize) return;
        rows = await page(PAGE, [rows[rows.length - 1].id, pageSize]);
      }
    } finally {
      client.release();
    }
  }

  private async write(batch: readonly PlantEntity[]): Promise<Outcome[]> {
    const first = new Map<string, PlantEntity>();
    for (const row of batch) if (!first.has(row.id)) first.set(row.id, row);
    // In id order: two instances inserting the same new ids in different orders would each wait
    // for the other's uncommitted rows (a deadlock, and a failed batch); in one order they queue.
    const sent = [...first.values()].sort(byId);

    const taken = new Map<string, PlantEntity>();
    const created = await withPooledClient(this.dataSource, async (client) => {
      const inserted = await boundedQuery<{ id: string }>(client, {
        text: INSERT,
        values: [sent.map((row) => row.id), ...PLANT_COLUMNS.map(({ field }) => sent.map((row) => row[field]))],
      });
      const ids = new Set(inserted.rows.map((row) => row.id));
      const lost = sent.filter((row) => !ids.has(row.id)).map((row) => row.id);
      if (lost.length > 0) {
        const stored = await boundedQuery<PlantEntity>(client, { text: SELECT_TAKEN, values: [lost] });
        for (const row of stored.rows) taken.set(row.id, row);
      }
      return ids;
    });
    return batch.map((row) => {
      const sentRow = first.get(row.id)!;
      if (!created.has(row.id)) return duplicateOutcome(row, taken.get(row.id));
      return sentRow === row ? 'created' : duplicateOutcome(row, sentRow);
    });
  }
}
