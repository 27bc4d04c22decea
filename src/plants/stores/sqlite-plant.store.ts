import type Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import {
  isSqliteBusy,
  nativeSqlite,
  PreparedStatement,
  SQLITE_LOCK_WAIT_MS,
  sqliteFailure,
} from '../../database/sqlite';
import type { StoreOutage } from '../../database/store-outage';
import { StoreUnavailableError } from '../../database/store-unavailable.error';
import { duplicateOutcome, type Outcome } from '../create-outcome';
import type { Plant } from '../plant.entity';
import type { PlantStore } from '../plant-store';

interface Pending {
  row: Plant;
  /** Past this, a create still waiting for the file's lock is answered 503. */
  deadline: number;
  resolve(outcome: Outcome): void;
  reject(error: unknown): void;
}

/**
 * How often a batch tries again for the write lock while another process holds it. Another
 * worker holds it for one commit (about a millisecond, its fsync); a failed attempt costs a few
 * microseconds. (Backing off to 25 ms put two workers' p99 at 50-60 ms; every 1 ms, at 19 ms.)
 */
const LOCK_RETRY_MS = 1;

/**
 * Plants in SQLite, with group commit. Creates that arrive in one turn of the event loop are
 * written in one `BEGIN IMMEDIATE` transaction, so one fsync (synchronous=FULL) covers all of
 * them, and none is answered before that commit returns. Within the batch each create is decided
 * by the primary key, in arrival order: the first of two creates of one id wins.
 *
 * When another process holds the file's write lock, the batch waits for it without blocking:
 * the attempt fails at once (busy timeout 0) and is retried on a timer, with newer creates
 * joining it in arrival order, while the event loop keeps answering everyone else. A create that
 * has waited SQLITE_LOCK_WAIT_MS is answered 503.
 */
export class SqlitePlantStore implements PlantStore {
  private queue: Pending[] = [];
  private scheduled = false;
  private readonly insert: PreparedStatement<[string, string, string | null]>;
  private readonly select: PreparedStatement<[string], { name: string; tag: string | null }>;
  private readonly firstPage: PreparedStatement<[number], Plant>;
  private readonly nextPage: PreparedStatement<[string, number], Plant>;
  private transaction?: { db: Database.Database; run: Database.Transaction<(batch: Pending[]) => Outcome[]> };

  constructor(
    private readonly dataSource: DataSource,
    private readonly outage: StoreOutage,
  ) {
    this.insert = new PreparedStatement(
      dataSource,
      'INSERT INTO "plant" ("id", "name", "tag") VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
    );
    this.select = new PreparedStatement(dataSource, 'SELECT "name", "tag" FROM "plant" WHERE "id" = ?');
    // CAST keeps ids above 2^53 exact: better-sqlite3 would hand an INTEGER back as a double.
    const columns = 'SELECT CAST("id" AS TEXT) AS "id", "name", "tag" FROM "plant"';
    // "plant"."id", the integer column: a bare "id" would be the text alias, in text order.
    this.firstPage = new PreparedStatement(dataSource, `${columns} ORDER BY "plant"."id" LIMIT ?`);
    this.nextPage = new PreparedStatement(
      dataSource,
      `${columns} WHERE "plant"."id" > ? ORDER BY "plant"."id" LIMIT ?`,
    );
  }

  create(row: Plant): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, deadline: Date.now() + SQLITE_LOCK_WAIT_MS, resolve, reject });
      this.schedule(0);
    });
  }

  async *list(pageSize = 1000): AsyncIterable<Plant> {
    // A page per query, never the whole table; `id > ?` resumes exactly where the last ended.
    let rows = this.firstPage.get().all(pageSize);
    for (;;) {
      yield* rows;
      if (rows.length < pageSize) return;
      await new Promise((resolve) => setImmediate(resolve));
      rows = this.nextPage.get().all(rows[rows.length - 1].id, pageSize);
    }
  }

  /** `delay` 0: the next turn of the event loop, so that creates arriving in this one join. */
  private schedule(delay: number): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const flush = (): void => this.flush();
    if (delay === 0) setImmediate(flush);
    else setTimeout(flush, delay);
  }

  private writeBatch(batch: Pending[]): Outcome[] {
    const insert = this.insert.get();
    const select = this.select.get();
    return batch.map(({ row }) => {
      if (insert.run(row.id, row.name, row.tag).changes === 1) return 'created';
      return duplicateOutcome(row, select.get(row.id));
    });
  }

  private begin(): Database.Transaction<(batch: Pending[]) => Outcome[]> {
    const db = nativeSqlite(this.dataSource);
    if (this.transaction?.db !== db) {
      this.transaction = { db, run: db.transaction((pending: Pending[]) => this.writeBatch(pending)) };
    }
    return this.transaction.run;
  }

  private flush(): void {
    this.scheduled = false;
    const now = Date.now();
    const expired = this.queue.filter((pending) => pending.deadline <= now);
    if (expired.length > 0) {
      this.queue = this.queue.filter((pending) => pending.deadline > now);
      const error = new StoreUnavailableError(
        `the SQLite file stayed locked by another process for ${SQLITE_LOCK_WAIT_MS} ms`,
      );
      this.outage.failed(error);
      for (const pending of expired) pending.reject(error);
    }
    const batch = this.queue;
    if (batch.length === 0) return;
    let outcomes: Outcome[];
    try {
      // IMMEDIATE takes the write lock up front, so a busy file fails here, before any write,
      // never half-way through the batch.
      outcomes = this.begin().immediate(batch);
    } catch (error) {
      if (isSqliteBusy(error)) {
        // The batch stays queued (newer creates join it behind) and tries again shortly.
        this.schedule(LOCK_RETRY_MS);
        return;
      }
      this.queue = [];
      const failure = sqliteFailure(error);
      if (failure instanceof StoreUnavailableError) this.outage.failed(failure);
      for (const pending of batch) pending.reject(failure); // nothing of the batch was committed
      return;
    }
    this.queue = [];
    this.outage.succeeded();
    batch.forEach((pending, i) => pending.resolve(outcomes[i]));
  }
}
