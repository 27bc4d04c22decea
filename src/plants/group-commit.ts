import type Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { nativeSqlite, PreparedStatement } from '../database/sqlite-native';
import { duplicateOutcome, type Outcome } from './create-outcome';
import type { Plant } from './plant.entity';

interface Pending {
  row: Plant;
  resolve(outcome: Outcome): void;
  reject(error: unknown): void;
}

/**
 * Group commit for SQLite. Creates that arrive in one turn of the event loop are written in one
 * transaction, so one fsync (synchronous=FULL) covers all of them, and none is answered before
 * that commit returns. Within the batch each create is still decided by the primary key, in
 * arrival order: the first of two creates of one id wins, the second sees its row.
 */
export class SqliteGroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  private readonly insert: PreparedStatement<[string, string, string | null]>;
  private readonly select: PreparedStatement<[string], { name: string; tag: string | null }>;
  private transaction?: { db: Database.Database; run: Database.Transaction<(batch: Pending[]) => Outcome[]> };

  constructor(private readonly dataSource: DataSource) {
    this.insert = new PreparedStatement(
      dataSource,
      'INSERT INTO "plant" ("id", "name", "tag") VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
    );
    this.select = new PreparedStatement(dataSource, 'SELECT "name", "tag" FROM "plant" WHERE "id" = ?');
  }

  create(row: Plant): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private writeBatch(batch: Pending[]): Outcome[] {
    const insert = this.insert.get();
    const select = this.select.get();
    return batch.map(({ row }) => {
      if (insert.run(row.id, row.name, row.tag).changes === 1) return 'created';
      return duplicateOutcome(row, select.get(row.id));
    });
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    let outcomes: Outcome[];
    try {
      const db = nativeSqlite(this.dataSource);
      if (db === undefined) throw new Error('The database connection is not open');
      if (this.transaction?.db !== db) {
        this.transaction = { db, run: db.transaction((pending: Pending[]) => this.writeBatch(pending)) };
      }
      // IMMEDIATE takes the write lock up front: waiting for another process happens in the
      // busy handler (up to the busy timeout), never as a failed upgrade half-way through.
      outcomes = this.transaction.run.immediate(batch);
    } catch (error) {
      for (const pending of batch) pending.reject(error); // nothing of the batch was committed
      return;
    }
    batch.forEach((pending, i) => pending.resolve(outcomes[i]));
  }
}
