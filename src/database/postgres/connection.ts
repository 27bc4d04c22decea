import { DatabaseError } from 'pg';
import { StoreUnavailableError } from '../../errors/api-error';

/** Every statement and lock wait ends within these; past them the request is answered 503. */
export const POSTGRES_STATEMENT_TIMEOUT_MS = 3000;
export const POSTGRES_LOCK_TIMEOUT_MS = 2000;
export const POSTGRES_POOL_WAIT_MS = 3000;
/** A connection, then a transaction's statements: a server that stopped running cannot fire its own bounds. */
export const POSTGRES_ANSWER_WAIT_MS = POSTGRES_POOL_WAIT_MS + POSTGRES_STATEMENT_TIMEOUT_MS;
/** Nothing of PostgreSQL's bounds a commit waiting for a synchronous standby; a retry answers 200 if it stood. */
export const POSTGRES_COMMIT_WAIT_MS = POSTGRES_STATEMENT_TIMEOUT_MS;

/** SQLSTATEs meaning "the store cannot take a create now": connection, read-only, auth, resources, locks, schema. */
const UNAVAILABLE_SQLSTATE = /^(08|25|28|3D|3F|40|53|55|57|58|XX)|^(42501|42P01|42703)$/;

/** A pg error by its SQLSTATE; anything not the server's answer is the connection failing (`EPIPE` is five capitals too). */
export function postgresFailure(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (error instanceof DatabaseError) {
    const code = error.code ?? '';
    return UNAVAILABLE_SQLSTATE.test(code) ? new StoreUnavailableError(`SQLSTATE ${code}`, { cause: error }) : error;
  }
  const code = (error as { code?: unknown } | null)?.code;
  return new StoreUnavailableError(typeof code === 'string' ? code : 'connection failed', { cause: error });
}

/** SET LOCAL, as one statement: a transaction pooler refuses these as connection parameters. */
export const BOUNDS =
  `SELECT set_config('statement_timeout', '${POSTGRES_STATEMENT_TIMEOUT_MS}', true), ` +
  `set_config('lock_timeout', '${POSTGRES_LOCK_TIMEOUT_MS}', true), ` +
  `set_config('idle_in_transaction_session_timeout', '${POSTGRES_STATEMENT_TIMEOUT_MS * 2}', true)`;
