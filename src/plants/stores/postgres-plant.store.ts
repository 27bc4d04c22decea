import type { PoolClient } from 'pg';
import type { DataSource } from 'typeorm';
import { postgresClient, postgresFailure } from '../../database/postgres';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../database/store-unavailable.error';
import { duplicateOutcome, type Outcome } from '../create-outcome';
import type { Plant } from '../plant.entity';
import type { PlantStore } from '../plant-store';

interface Pending {
  row: Plant;
  resolve(outcome: Outcome): void;
  reject(error: unknown): void;
}

/**
 * One statement inserts a whole batch and commits it (autocommit: one round trip, one WAL
 * flush); ids already taken, by an earlier create or by another instance at the same moment,
 * are skipped by the primary key and left out of RETURNING. Ids travel as decimal text and are
 * cast by the server, so they never pass through a JS number.
 */
const INSERT = {
  name: 'plant-store/insert-batch',
  text:
    'INSERT INTO "plant" ("id", "name", "tag") ' +
    'SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) ' +
    'ON CONFLICT DO NOTHING RETURNING "id"::text AS "id"',
};

/** The stored plants behind the ids a batch lost, in one round trip. */
const SELECT_TAKEN = {
  name: 'plant-store/select-taken',
  text: 'SELECT "id"::text AS "id", "name", "tag" FROM "plant" WHERE "id" = ANY($1::bigint[])',
};

// "plant"."id", the bigint column: a bare "id" in ORDER BY would be the text alias, in text order.
const PAGE =
  'SELECT "id"::text AS "id", "name", "tag" FROM "plant" WHERE "plant"."id" > $1::bigint ORDER BY "plant"."id" LIMIT $2';
const FIRST_PAGE = 'SELECT "id"::text AS "id", "name", "tag" FROM "plant" ORDER BY "plant"."id" LIMIT $1';

/** Batches written at once: pipelining on the pool (10 connections) without starving lookups. */
const MAX_BATCHES_IN_FLIGHT = 4;
const MAX_BATCH_SIZE = 1000;

/**
 * Plants in PostgreSQL, with the same group commit as on SQLite: creates that arrive together
 * share one `INSERT … ON CONFLICT DO NOTHING RETURNING id` (one round trip and one commit), and
 * the ids it did not insert are read back in one `SELECT … WHERE id = ANY(…)`. Prepared once per
 * connection (named statements), with no query building per request. Within a batch the first
 * create of an id is the one sent; later ones of the same id are judged against its result,
 * exactly as if they had arrived one after the other.
 */
export class PostgresPlantStore implements PlantStore {
  private queue: Pending[] = [];
  private scheduled = false;
  private inFlight = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {}

  create(row: Plant): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      this.schedule();
    });
  }

  async *list(pageSize = 1000): AsyncIterable<Plant> {
    const client = await this.connect();
    try {
      const page = async (sql: string, values: unknown[]): Promise<Plant[]> => {
        try {
          return (await client.query<Plant>(sql, values)).rows;
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

  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_BATCHES_IN_FLIGHT || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.inFlight >= MAX_BATCHES_IN_FLIGHT || this.queue.length === 0) return;
      const batch = this.queue.splice(0, MAX_BATCH_SIZE);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.schedule();
      });
      this.schedule();
    });
  }

  private async connect(): Promise<PoolClient> {
    try {
      return await postgresClient(this.dataSource);
    } catch (error) {
      if (error instanceof StoreUnavailableError) this.outage.failed(error);
      throw error;
    }
  }

  /** Never rejects: every create of the batch is settled, together. */
  private async write(batch: Pending[]): Promise<void> {
    const first = new Map<string, Plant>();
    for (const { row } of batch) if (!first.has(row.id)) first.set(row.id, row);
    const sent = [...first.values()];

    let created: Set<string>;
    let taken: Map<string, Pick<Plant, 'name' | 'tag'>>;
    try {
      const client = await this.connect();
      let broken = false;
      try {
        const inserted = await client.query<{ id: string }>({
          ...INSERT,
          values: [sent.map((row) => row.id), sent.map((row) => row.name), sent.map((row) => row.tag)],
        });
        created = new Set(inserted.rows.map((row) => row.id));
        const lost = sent.filter((row) => !created.has(row.id)).map((row) => row.id);
        taken = new Map();
        if (lost.length > 0) {
          const stored = await client.query<Plant>({ ...SELECT_TAKEN, values: [lost] });
          for (const row of stored.rows) taken.set(row.id, row);
        }
      } catch (error) {
        const failure = postgresFailure(error);
        // A connection whose transport failed is discarded rather than handed to the next batch.
        broken = failure instanceof StoreUnavailableError && (error as { code?: unknown }).code === undefined;
        throw failure;
      } finally {
        client.release(broken);
      }
    } catch (error) {
      if (error instanceof StoreUnavailableError) this.outage.failed(error);
      for (const pending of batch) pending.reject(error);
      return;
    }
    this.outage.succeeded();

    for (const pending of batch) {
      const { row } = pending;
      const sentRow = first.get(row.id)!;
      try {
        if (created.has(row.id)) {
          pending.resolve(sentRow === row ? 'created' : duplicateOutcome(row, sentRow));
        } else {
          pending.resolve(duplicateOutcome(row, taken.get(row.id)));
        }
      } catch (error) {
        pending.reject(error);
      }
    }
  }
}
