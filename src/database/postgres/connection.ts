import { DatabaseError, type Pool, type PoolClient, type QueryConfig, type QueryResult, type QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { answeredWithin, StoreUnavailableError } from '../../errors/store-unavailable.error';

/**
 * Every statement, and every wait for a lock, ends within this bound; past it PostgreSQL cancels
 * the statement (nothing of it is committed) and the request is answered 503. So is a wait for
 * a free connection in the pool.
 */
export const POSTGRES_STATEMENT_TIMEOUT_MS = 3000;
export const POSTGRES_LOCK_TIMEOUT_MS = 2000;
export const POSTGRES_POOL_WAIT_MS = 3000;
/**
 * How long the client waits for any answer of a bounded transaction: the pool wait, the
 * statement bound and a margin for the round trip. Past it the connection is dropped (a
 * PostgreSQL that stopped answering, a network that lost it): the server's own bounds cannot
 * fire on a server that does not run.
 */
const POSTGRES_ANSWER_WAIT_MS = POSTGRES_POOL_WAIT_MS + POSTGRES_STATEMENT_TIMEOUT_MS + 1000;

/**
 * A `COMMIT` that has not returned this long after its statement finished is given up (503) and
 * its connection dropped. PostgreSQL stops a statement's timeout before the commit, so nothing
 * of its own bounds a commit that waits for a synchronous standby. Its backend waits on until
 * the standby answers, and the commit then stands, as with a connection lost during it: a retry
 * of the same plant answers 200. (A cancel would end that wait directly, but PgBouncer 1.18 in
 * transaction mode stopped serving the database after one.)
 */
export const POSTGRES_COMMIT_WAIT_MS = POSTGRES_STATEMENT_TIMEOUT_MS;

/**
 * SQLSTATE classes and codes that mean "the store cannot take a create now", as opposed to a bug
 * of ours: connection exceptions (08), a read-only transaction (25: a standby, or a pooler
 * pointed at one after a failover), authorization and catalog failures (28, 3D, 3F: a password
 * rotated, the database dropped), a serialization or deadlock failure (40), insufficient
 * resources (53: a full disk, too many connections), objects in use or locked (55), operator
 * intervention (57: shutdown, cancel by our own statement_timeout), system and internal errors
 * (58, XX: I/O, corruption), and a schema the service cannot use: insufficient privilege
 * (42501), a missing table or column (42P01, 42703).
 */
const UNAVAILABLE_SQLSTATE = /^(08|25|28|3D|3F|40|53|55|57|58|XX)|^(42501|42P01|42703)$/;

/**
 * A pg error as the rest of the service should see it. The server's answer (a DatabaseError,
 * with its SQLSTATE) is judged by its SQLSTATE; anything else is the connection failing
 * (refused, reset, a broken pipe, terminated, a pool timeout, no answer in time), which is
 * unavailability by definition. The class decides, not the code's shape: `EPIPE` is five
 * capitals too.
 */
export function postgresFailure(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (error instanceof DatabaseError) {
    const code = error.code ?? '';
    return UNAVAILABLE_SQLSTATE.test(code) ? new StoreUnavailableError(`SQLSTATE ${code}`, { cause: error }) : error;
  }
  const code = (error as { code?: unknown } | null)?.code;
  return new StoreUnavailableError(typeof code === 'string' ? code : 'connection failed', { cause: error });
}

/** The connection itself failed (not the server's answer): it is discarded, never reused. */
export function isTransportFailure(error: unknown): boolean {
  return !(error instanceof DatabaseError);
}

/** The pg pool under a TypeORM DataSource: the hot paths speak to it directly. */
export function postgresPool(dataSource: DataSource): Pool {
  const pool = dataSource.isInitialized ? (dataSource.driver as unknown as { master?: Pool }).master : undefined;
  if (pool === undefined) throw new StoreUnavailableError('the PostgreSQL pool is closed');
  return pool;
}

const heard = new WeakSet<PoolClient>();

/** A connection from the pool; failing to get one in time is unavailability. */
export async function postgresClient(dataSource: DataSource): Promise<PoolClient> {
  let client: PoolClient;
  try {
    client = await postgresPool(dataSource).connect();
  } catch (error) {
    throw postgresFailure(error);
  }
  // A connection that fails while checked out (its server, or a pooler in between, gone) also
  // emits 'error', which the pool listens to only while the connection is idle; unheard, it
  // would end the process. Its queries reject with the failure, and the pool drops it on release.
  if (!heard.has(client)) {
    heard.add(client);
    client.on('error', () => undefined);
  }
  return client;
}

/**
 * `work` on a connection from the pool, which goes back to it afterwards, or is discarded when
 * the connection itself failed; a failure comes out as `postgresFailure` sees it.
 */
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

/**
 * The bounds, set for one transaction (SET LOCAL). They end with it, so they hold the same
 * directly and through a transaction pooler (PgBouncer, RDS Proxy, Neon's and Supabase's pooled
 * endpoints), which hands each transaction whichever server connection is free and refuses
 * them as connection parameters.
 */
export const BOUNDS =
  `SET LOCAL statement_timeout = ${POSTGRES_STATEMENT_TIMEOUT_MS}; ` +
  `SET LOCAL lock_timeout = ${POSTGRES_LOCK_TIMEOUT_MS}; ` +
  `SET LOCAL idle_in_transaction_session_timeout = ${POSTGRES_STATEMENT_TIMEOUT_MS * 2}`;

/** pg reads `query_timeout` from a query's own config too; its types declare it for the client only. */
function within(query: QueryConfig, ms: number): QueryConfig {
  return Object.assign(query, { query_timeout: ms });
}

/**
 * Runs one statement in a transaction the server bounds: `BEGIN` with the bounds, the
 * statement, `COMMIT`, pipelined on one connection (one round trip). Rejects if any of the
 * three fails; a statement that failed leaves nothing (its `COMMIT` rolls back), and a `COMMIT`
 * that failed leaves the outcome unknown, which the caller reports as unavailability. The
 * statement is unnamed: a named one belongs to one server connection, which a pooler does not
 * keep for the next transaction.
 *
 * A connection from our pool to a pooler is not yet a connection to PostgreSQL: a paused
 * PgBouncer, one retrying its login to a restarted server, or a session pool with none free,
 * holds `BEGIN` before PostgreSQL sees it, where none of the server's bounds can start. So the
 * client bounds the wait itself: no answer to `BEGIN` within POSTGRES_POOL_WAIT_MS, or to the
 * rest within POSTGRES_ANSWER_WAIT_MS, and pg drops the connection (the caller releases it as
 * broken): the request is answered 503, and nothing of it was committed.
 */
export async function boundedQuery<R extends QueryResultRow>(
  client: PoolClient,
  query: QueryConfig,
): Promise<QueryResult<R>> {
  // Sent in this order, on one connection.
  const begin = client.query(within({ text: `BEGIN; ${BOUNDS}` }, POSTGRES_POOL_WAIT_MS));
  const statement = client.query<R>(within({ text: query.text, values: query.values }, POSTGRES_ANSWER_WAIT_MS));
  const [begun, result, committed] = await Promise.allSettled([begin, statement, commitWithin(client, statement)]);
  if (begun.status === 'rejected') throw begun.reason;
  if (result.status === 'rejected') throw result.reason;
  if (committed.status === 'rejected') throw committed.reason;
  return result.value;
}

/**
 * `COMMIT` on `client`, given up when it has not returned POSTGRES_COMMIT_WAIT_MS after `after`,
 * the statement before it, settled.
 */
function commitWithin(client: PoolClient, after: Promise<unknown>): Promise<unknown> {
  const committed = client.query(within({ text: 'COMMIT' }, POSTGRES_ANSWER_WAIT_MS));
  // What the commit says once it was given up is of no one's concern.
  committed.catch(() => undefined);
  const settled = after.then(
    () => undefined,
    () => undefined,
  );
  return settled.then(() =>
    answeredWithin(
      committed,
      POSTGRES_COMMIT_WAIT_MS,
      `the commit did not complete within ${POSTGRES_COMMIT_WAIT_MS} ms (waiting for a synchronous standby?)`,
    ),
  );
}
