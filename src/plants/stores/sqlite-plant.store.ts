import type Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { GroupCommit } from '../../database/group-commit';
import {
  isSqliteBusy,
  nativeSqlite,
  PreparedStatement,
  SQLITE_LOCK_WAIT_MS,
  SqliteFiles,
  sqliteFailure,
} from '../../database/sqlite/handle';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../errors/store-unavailable.error';
import { duplicateOutcome, type Outcome } from '../create-outcome';
import { PLANT_FIELDS, type PlantEntity } from '../plant.entity';
import type { PlantStore } from '../plant-store';

const FIELDS = PLANT_FIELDS.map((field) => `"${field}"`).join(', ');
// Bound by name, from the row itself.
const INSERT = `INSERT INTO "plant" ("id", ${FIELDS}) VALUES (${['id', ...PLANT_FIELDS].map((field) => `@${field}`).join(', ')}) ON CONFLICT DO NOTHING`;
// CAST keeps ids above 2^53 exact: better-sqlite3 would hand an INTEGER back as a double.
const SELECT = `SELECT CAST("id" AS TEXT) AS "id", ${FIELDS} FROM "plant"`;

/**
 * How often a batch tries again for the write lock while another process holds it. Another
 * worker holds it for one commit (its fsync); a failed attempt costs a few microseconds, and
 * backing off further lengthens two workers' p99 (see docs/performance-log.md).
 */
const LOCK_RETRY_MS = 1;

/**
 * Plants in SQLite, by group commit (GroupCommit): a batch is one `BEGIN IMMEDIATE`
 * transaction, so one fsync covers all of it. Within it each create is decided by the primary
 * key, in arrival order: the first of two creates of one id wins. IMMEDIATE takes the write lock
 * up front, so a file another process holds fails at once, before any write, and the batch
 * waits for it without blocking (busy timeout 0, retried on a timer), for at most
 * SQLITE_LOCK_WAIT_MS. Before each batch and after each commit the files are checked to be the
 * ones on disk, whole (SqliteFiles).
 */
export class SqlitePlantStore implements PlantStore {
  private readonly batches: GroupCommit<PlantEntity, Outcome>;
  private readonly insert: PreparedStatement<[PlantEntity]>;
  private readonly select: PreparedStatement<[string], PlantEntity>;
  private readonly firstPage: PreparedStatement<[number], PlantEntity>;
  private readonly nextPage: PreparedStatement<[string, number], PlantEntity>;
  private readonly files: SqliteFiles;
  private transaction?: {
    db: Database.Database;
    run: Database.Transaction<(batch: readonly PlantEntity[]) => Outcome[]>;
  };

  constructor(
    private readonly dataSource: DataSource,
    outage: StoreOutage,
  ) {
    this.files = new SqliteFiles(dataSource, outage);
    this.insert = new PreparedStatement(dataSource, INSERT);
    // "plant"."id", the integer column: a bare "id" would be the text alias, in text order.
    this.select = new PreparedStatement(dataSource, `${SELECT} WHERE "plant"."id" = ?`);
    this.firstPage = new PreparedStatement(dataSource, `${SELECT} ORDER BY "plant"."id" LIMIT ?`);
    this.nextPage = new PreparedStatement(dataSource, `${SELECT} WHERE "plant"."id" > ? ORDER BY "plant"."id" LIMIT ?`);
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
    let rows = this.firstPage.get().all(pageSize);
    for (;;) {
      yield* rows;
      if (rows.length < pageSize) return;
      await new Promise((resolve) => setImmediate(resolve));
      rows = this.nextPage.get().all(rows[rows.length - 1].id, pageSize);
    }
  }

  private insertAll(batch: readonly PlantEntity[]): Outcome[] {
    // Under the write lock, before writing: a log cut short since the last look would put this
    // batch after a hole that recovery never reads past.
    this.files.check();
    const insert = this.insert.get();
    const select = this.select.get();
    return batch.map((row) => {
      if (insert.run(row).changes === 1) return 'created';
      return duplicateOutcome(row, select.get(row.id));
    });
  }

  /** The batch's transaction, made once per connection (a reopened store gets a new one). */
  private begin(): Database.Transaction<(batch: readonly PlantEntity[]) => Outcome[]> {
    const db = nativeSqlite(this.dataSource);
    if (this.transaction?.db !== db) {
      this.transaction = { db, run: db.transaction((batch: readonly PlantEntity[]) => this.insertAll(batch)) };
    }
    return this.transaction.run;
  }

  private write(batch: readonly PlantEntity[]): Outcome[] {
    let outcomes: Outcome[];
    try {
      outcomes = this.begin().immediate(batch);
    } catch (error) {
      throw isSqliteBusy(error) ? error : sqliteFailure(error);
    }
    // Committed, but to the files this process opened: if they are no longer the ones on disk,
    // the commit may be lost, so it is not acknowledged.
    this.files.check();
    return outcomes;
  }
}
