import { closeSync, existsSync, fsyncSync, linkSync, openSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { StoreCommandError, StoreCommandFailure } from '../store-kind';

function fsyncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A hard link fails rather than overwrite; without hard links, a rename after a last look. */
function nameWithoutOverwriting(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new StoreCommandError(`${to} exists: a backup goes to a new file`);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
    if (existsSync(to)) throw new StoreCommandError(`${to} exists: a backup goes to a new file`);
    renameSync(from, to);
  }
}

/** SQLite's online backup to a new 0600 file beside `file`, synced, then linked: `file` is the whole copy or nothing. */
export async function backupSqlite(dataSource: DataSource, file: string): Promise<void> {
  if (existsSync(file)) throw new StoreCommandError(`${file} exists: a backup goes to a new file`);
  const partial = join(dirname(file), `.${basename(file)}.partial-${process.pid}`);
  try {
    closeSync(openSync(partial, 'wx', 0o600));
  } catch (error) {
    throw new StoreCommandError(`cannot create ${file} (${(error as NodeJS.ErrnoException).code ?? 'unknown'})`);
  }
  try {
    // A connection of its own: better-sqlite3's online backup, beside the store's writers.
    const source = new Database(String(dataSource.options.database), { fileMustExist: true });
    try {
      await source.backup(partial);
    } finally {
      source.close();
    }
    fsyncFile(partial);
    nameWithoutOverwriting(partial, file);
    fsyncFile(dirname(file));
  } catch (error) {
    if (error instanceof StoreCommandError) throw error;
    const code = (error as { code?: unknown }).code;
    throw new StoreCommandFailure(
      `cannot write the backup to ${file} (${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message}); nothing was left behind`,
    );
  } finally {
    rmSync(partial, { force: true });
    rmSync(`${partial}-journal`, { force: true });
  }
}
