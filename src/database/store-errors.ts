/**
 * Whether an error means "the store cannot answer right now" (503) rather than a bug (500):
 * a locked or unwritable SQLite file, a closed handle, a PostgreSQL server that is down,
 * restarting or out of connections.
 */
const UNAVAILABLE_CODES = new Set([
  // SQLite (better-sqlite3's SqliteError.code; extended codes start with these)
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'SQLITE_CANTOPEN',
  'SQLITE_READONLY',
  'SQLITE_PROTOCOL',
  // sockets
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  // PostgreSQL SQLSTATE: admin shutdown, crash shutdown, cannot connect now, too many connections
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

const UNAVAILABLE_MESSAGES = [
  'The database connection is not open', // better-sqlite3 after close
  'Connection terminated', // pg
  'timeout exceeded when trying to connect', // pg pool
  'Cannot use a pool after calling end', // pg pool
  'DataSource is not initialized', // typeorm
  'Driver not Connected',
];

function codeOf(error: object): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

export function isStoreUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 3) return false;
  const code = codeOf(error);
  if (code !== undefined) {
    if (UNAVAILABLE_CODES.has(code)) return true;
    if (/^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|READONLY)_/.test(code)) return true;
    if (/^08/.test(code)) return true; // PostgreSQL connection exceptions
  }
  const message = (error as { message?: unknown }).message;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((m) => message.includes(m))) return true;
  // TypeORM wraps the driver's error in QueryFailedError.driverError
  return isStoreUnavailable((error as { driverError?: unknown }).driverError, depth + 1);
}
