import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';

/** Any constant; the same in every instance, so that only one migrates at a time. */
const MIGRATION_LOCK_KEY = 7_135_190_412;

/**
 * Runs pending migrations so that several instances starting at once on one store are safe.
 * TypeORM reads the list of executed migrations before it takes any lock, so two processes
 * could both try to apply the same one. PostgreSQL: a session advisory lock serialises them.
 * SQLite: the file lock serialises the writes; a process that lost the race finds the work
 * done when it looks again.
 */
export async function runMigrationsSafely(dataSource: DataSource): Promise<void> {
  if (dataSource.options.type === 'postgres') {
    const lock = dataSource.createQueryRunner();
    try {
      await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
      await lock.release();
    }
    return;
  }
  for (let attempt = 1; ; attempt++) {
    try {
      await dataSource.runMigrations({ transaction: 'each' });
      return;
    } catch (error) {
      if (!(await dataSource.showMigrations())) return; // another process applied them
      if (attempt >= 5) throw error;
      await sleep(50 * attempt);
    }
  }
}
