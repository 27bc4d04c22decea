import { DatabaseError, type Pool, type PoolClient, type QueryConfig, type QueryResult, type QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { answeredWithin, StoreUnavailableError } from '../../errors/api-error';

/** Every statement and lock wait ends within these; past them the request is answered 503. */
export const POSTGRES_STATEMENT_TIMEOUT_MS = 3000;
export const POSTGRES_LOCK_TIMEOUT_MS = 2000;
export const POSTGRES_POOL_WAIT_MS = 3000;
// A server that stopped running cannot fire its own bounds.
const POSTGRES_ANSWER_WAIT_MS = POSTGRES_POOL_WAIT_MS + POSTGRES_STATEMENT_TIMEOUT_MS + 1000;
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

/** The connection itself failed, not the server's answer: it is discarded, never reused. */
export function isTransportFailure(error: unknown): boolean {
  return !(error instanceof DatabaseError);
}

/** The pg pool under a TypeORM DataSource (its driver's public `master`). */
export function postgresPool(dataSource: DataSource): Pool {
  const pool = dataSource.isInitialized ? (dataSource.driver as unknown as { master?: Pool }).master : undefined;
  if (pool === undefined) throw new StoreUnavailableError('the PostgreSQL pool is closed');
  return pool;
}

const heard = new WeakSet<PoolClient>();

export async function postgresClient(dataSource: DataSource): Promise<PoolClient> {
  let client: PoolClient;
  try {
    client = await postgresPool(dataSource).connect();
  } catch (error) {
    throw postgresFailure(error);
  }
  // The pool hears a connection's 'error' only while it is idle; unheard, it would end the process.
  if (!heard.has(client)) {
    heard.add(client);
    client.on('error', () => undefined);
  }
  return client;
}

export async function withPooledClient<T>(
  dataSource: DataSource,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await postgresClient(dataSource);
  let broken = false;
  try {
    return await work(client);
  } catch (error) {
    broken = isTransportFailure(error);
    throw postgresFailure(error);
  } finally {
    client.release(broken);
  }
}

/** SET LOCAL: a transaction pooler refuses these as connection parameters. */
export const BOUNDS =
  `SET LOCAL statement_timeout = ${POSTGRES_STATEMENT_TIMEOUT_MS}; ` +
  `SET LOCAL lock_timeout = ${POSTGRES_LOCK_TIMEOUT_MS}; ` +
  `SET LOCAL idle_in_transaction_session_timeout = ${POSTGRES_STATEMENT_TIMEOUT_MS * 2}`;

/** pg reads `query_timeout` from a query's config too; its types declare it for the client only. */
function within(query: QueryConfig, ms: number): QueryConfig {
  return Object.assign(query, { query_timeout: ms });
}

/**
 * BEGIN with the bounds, the statement, COMMIT: pipelined, unnamed (a pooler keeps no named one).
 * A pooler may hold BEGIN where no server bound runs yet, so the client bounds its waits too.
 */
export async function boundedQuery<R extends QueryResultRow>(
  client: PoolClient,
  query: QueryConfig,
): Promise<QueryResult<R>> {
  const begin = client.query(within({ text: `BEGIN; ${BOUNDS}` }, POSTGRES_POOL_WAIT_MS));
  const statement = client.query<R>(within({ text: query.text, values: query.values }, POSTGRES_ANSWER_WAIT_MS));
  const [begun, result, committed] = await Promise.allSettled([begin, statement, commitWithin(client, statement)]);
  if (begun.status === 'rejected') throw begun.reason;
  if (result.status === 'rejected') throw result.reason;
  if (committed.status === 'rejected') throw committed.reason;
  return result.value;
}

/** A read and its bounds in one simple query (one implicit transaction), given up when BEGIN would be. */
export async function boundedRead<R extends QueryResultRow>(client: PoolClient, text: string): Promise<R[]> {
  const results = await client.query(within({ text: `${BOUNDS}; ${text}` }, POSTGRES_POOL_WAIT_MS));
  return (results as unknown as QueryResult<R>[]).at(-1)?.rows ?? [];
}

/** `COMMIT`, given up POSTGRES_COMMIT_WAIT_MS after the statement before it settled. */
function commitWithin(client: PoolClient, after: Promise<unknown>): Promise<unknown> {
  const committed = client.query(within({ text: 'COMMIT' }, POSTGRES_ANSWER_WAIT_MS));
  committed.catch(() => undefined); // once given up, what it says is nobody's concern
  return after
    .catch(() => undefined)
    .then(() =>
      answeredWithin(
        committed,
        POSTGRES_COMMIT_WAIT_MS,
        `the commit did not complete within ${POSTGRES_COMMIT_WAIT_MS} ms (waiting for a synchronous standby?)`,
      ),
    );
}
