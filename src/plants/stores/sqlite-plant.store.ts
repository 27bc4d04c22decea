import type Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { GroupCommit } from '../../database/group-commit';
import { isSqliteBusy, nativeSqlite, SQLITE_LOCK_WAIT_MS, sqliteFailure } from '../../database/sqlite/handle';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../errors/api-error';
import { duplicateOutcome, type Outcome, type PlantStore } from '../plant-store';
import { PLANT_FIELDS, type PlantEntity } from '../plant.entity';

const FIELDS = PLANT_FIELDS.map((field) => `"${field}"`).join(', ');
const INSERT = `INSERT INTO "plant" ("id", ${FIELDS}) VALUES (${['id', ...PLANT_FIELDS].map((field) => `@${field}`).join(', ')}) ON CONFLICT DO NOTHING`;
// CAST keeps ids above 2^53 exact: better-sqlite3 would hand an INTEGER back as a double.
const SELECT = `SELECT CAST("id" AS TEXT) AS "id", ${FIELDS} FROM "plant"`;

/** Another process holds the lock for one commit; backing off further lengthens p99. */
const LOCK_RETRY_MS = 1;

/** A batch is one BEGIN IMMEDIATE: one fsync, and a lock another process holds fails before any write. */
export class SqlitePlantStore implements PlantStore {
  private readonly batches: GroupCommit<PlantEntity, Outcome>;
  private readonly firstPage: Database.Statement<[number], PlantEntity>;
  private readonly nextPage: Database.Statement<[string, number], PlantEntity>;
  private readonly transaction: Database.Transaction<(batch: readonly PlantEntity[]) => Outcome[]>;

  constructor(dataSource: DataSource, outage: StoreOutage) {
    const db = nativeSqlite(dataSource);
    const insert = db.prepare<[PlantEntity]>(INSERT);
    // "plant"."id", the integer column: a bare "id" would be the text alias, in text order.
    const select = db.prepare<[string], PlantEntity>(`${SELECT} WHERE "plant"."id" = ?`);
    this.firstPage = db.prepare(`${SELECT} ORDER BY "plant"."id" LIMIT ?`);
    this.nextPage = db.prepare(`${SELECT} WHERE "plant"."id" > ? ORDER BY "plant"."id" LIMIT ?`);
    this.transaction = db.transaction((batch: readonly PlantEntity[]) =>
      batch.map((row) => (insert.run(row).changes === 1 ? 'created' : duplicateOutcome(row, select.get(row.id)))),
    );
    this.batches = new GroupCommit({
      write: (batch) => this.write(batch),
      outage,
      busy: {
        isBusy: isSqliteBusy,
        retryMs: LOCK_RETRY_MS,
        maxWaitMs: SQLITE_LOCK_WAIT_MS,
        timedOut: () =>
          new StoreUnavailableError(`the SQLite file stayed locked by another process for ${SQLITE_LOCK_WAIT_MS} ms`),
      },
    });
  }

  create(row: PlantEntity): Promise<Outcome> {
    return this.batches.enqueue(row);
  }

  async *list(pageSize = 1000): AsyncIterable<PlantEntity> {
    // A page per query, never the whole table; `id > ?` resumes exactly where the last ended.
    let rows = this.firstPage.all(pageSize);
    for (;;) {
      yield* rows;
      if (rows.length < pageSize) return;
      await new Promise((resolve) => setImmediate(resolve));
      rows = this.nextPage.all(rows[rows.length - 1].id, pageSize);
    }
  }

  private write(batch: readonly PlantEntity[]): Outcome[] {
    try {
      return this.transaction.immediate(batch);
    } catch (error) {
      throw isSqliteBusy(error) ? error : sqliteFailure(error);
    }
  }
}
