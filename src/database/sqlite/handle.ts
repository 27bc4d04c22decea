import { StoreUnavailableError } from '../../errors/api-error';

/** Primary result codes meaning "the file cannot be used right now", not a bug of ours. */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL|NOTADB|CORRUPT|PERM)(_|$)/;

/** A schema the service cannot use (tables reverted under it): SQLite says so only in words. */
const MISSING_SCHEMA = /^no such (table|column): /;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isSqliteBusy(error: unknown): boolean {
  return /^SQLITE_BUSY(_|$)/.test(codeOf(error) ?? '');
}

/** A driver error as the rest of the service sees it: unavailability is one class. */
export function sqliteFailure(error: unknown): unknown {
  if ((error as Error | null)?.message === 'The database connection is not open') {
    return new StoreUnavailableError('the SQLite database is closed', { cause: error });
  }
  const code = codeOf(error);
  if (code !== undefined && UNAVAILABLE.test(code)) return new StoreUnavailableError(code, { cause: error });
  if (code === 'SQLITE_ERROR' && MISSING_SCHEMA.test((error as Error).message)) {
    return new StoreUnavailableError(`${code}: ${(error as Error).message}`, { cause: error });
  }
  return error;
}
