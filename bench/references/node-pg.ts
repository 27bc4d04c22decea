/**
 * Reference 3, the PostgreSQL baseline: node:http + `pg` (pool of 10), one autocommit
 * `INSERT … ON CONFLICT DO NOTHING` per request (and the duplicate rule's read when it inserted
 * nothing), exact int64 parse, validation, the Error body. The bearer token is checked by its
 * SHA-256 against the one row read at start, so the store sees exactly one statement per create.
 * It opens a store that the service's migrations created. Prints {"port": N} once listening.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { created, fail, plantOf, withBody } from './plain-create';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
async function handle(request: IncomingMessage, response: ServerResponse, raw: Buffer, hashes: Set<string>) {
  const plant = plantOf(request, response, raw, (hash) => hashes.has(hash));
  if (plant === undefined) return;
  const { name, tag } = plant;
  const id = plant.id.toString();
  const inserted = await pool.query('INSERT INTO plant (id, name, tag) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
    id,
    name,
    tag,
  ]);
  if (inserted.rowCount === 0) {
    const stored = await pool.query<{ name: string; tag: string | null }>('SELECT name, tag FROM plant WHERE id = $1', [
      id,
    ]);
    if (stored.rows[0]?.name !== name || stored.rows[0]?.tag !== tag) return fail(response, 409, 'Conflict');
  }
  created(response, plant);
}

async function main(): Promise<void> {
  const rows = await pool.query<{ token_hash: string }>('SELECT token_hash FROM api_token WHERE revoked_at IS NULL');
  const hashes = new Set(rows.rows.map((row) => row.token_hash));
  const server = createServer(
    withBody((request, response, raw) =>
      handle(request, response, raw, hashes).catch(() => fail(response, 503, 'Unavailable')),
    ),
  );
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  });
  process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
}

void main();
