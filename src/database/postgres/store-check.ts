import type { DataSource } from 'typeorm';
import { boundedQuery, withPooledClient } from './connection';
import { StoreCheck } from '../store-check';
import { StoreUnavailableError } from '../../errors/store-unavailable.error';

/**
 * In one bounded transaction (boundedQuery, through the same pool as the creates): the lock an
 * INSERT takes on `plant` and the one a read takes on `api_token`, without waiting (a missing
 * table, and a table locked by someone else, fail here as they would for a create); the rights
 * a create needs (the lock asks for any right to write, not INSERT's); whether the transaction
 * is read-only (a standby, or a database set `default_transaction_read_only`: what a pooler
 * pointed at a replica after a failover looks like); and a record in the WAL, so that its commit
 * is a real one: written, flushed and, with a synchronous standby, waited for, within the bound
 * of every commit (POSTGRES_COMMIT_WAIT_MS). Nothing of the tables is written; each check
 * commits a record of a few dozen bytes. What only a write to the tables would show (a full disk) ends an
 * outage when the next create succeeds.
 */
const CHECK =
  'LOCK TABLE "plant" IN ROW EXCLUSIVE MODE NOWAIT; ' +
  'LOCK TABLE "api_token" IN ACCESS SHARE MODE NOWAIT; ' +
  `SELECT current_setting('transaction_read_only') AS "readOnly", ` +
  // One right per call: a list asks whether any of them is held.
  `has_table_privilege('"plant"', 'INSERT') AND has_table_privilege('"plant"', 'SELECT') ` +
  `AND has_table_privilege('"api_token"', 'SELECT') AS "mayWrite", ` +
  // A transactional WAL record any user may write: the commit then waits as a create's does.
  `pg_logical_emit_message(true, 'plant-store', 'health check') IS NOT NULL AS "committing"`;

interface CheckRow {
  readOnly: string;
  mayWrite: boolean;
}

export class PostgresStoreCheck extends StoreCheck {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async ready(): Promise<void> {
    const row = await withPooledClient(this.dataSource, async (client) => {
      // Several statements in one text: pg answers with one result each.
      const results = (await boundedQuery(client, { text: CHECK })) as unknown as { rows: CheckRow[] }[];
      return results.at(-1)?.rows[0];
    });
    if (row?.readOnly !== 'off') throw new StoreUnavailableError('the database is read-only');
    if (row.mayWrite !== true) throw new StoreUnavailableError('the user may not write the tables (SQLSTATE 42501)');
  }

  takesWrites(): Promise<void> {
    return this.ready();
  }
}
