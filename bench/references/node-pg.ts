/**
 * Reference 3, the PostgreSQL baseline: node:http + `pg` (pool of 10), one autocommit
 * `INSERT … ON CONFLICT DO NOTHING` per request (and the duplicate rule's read when it inserted
 * nothing), exact int64 parse, validation, the Error body. The bearer token is checked by its
 * SHA-256 against the one row read at start, so the store sees exactly one statement per create.
 * It opens a store that the service's migrations created. Prints {"port": N} once listening.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'lossless-json';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const MIN = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;

function send(response: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  response.end(body);
}

const fail = (response: ServerResponse, error: number, message: string): void =>
  send(response, 400, { error, message });

async function handle(request: IncomingMessage, response: ServerResponse, raw: Buffer, hashes: Set<string>) {
  if (request.url !== '/plants') return fail(response, 404, 'Not found');
  if (request.method !== 'POST') return fail(response, 405, 'Method not allowed');
  const token = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (token === undefined || !hashes.has(createHash('sha256').update(token).digest('hex'))) {
    return fail(response, 401, 'Unauthorized');
  }
  if (!/^application\/json\b/.test(request.headers['content-type'] ?? '')) return fail(response, 415, 'Unsupported');
  let body: unknown;
  try {
    body = parse(raw.toString('utf8'), null, (text) => (/^-?\d+$/.test(text) ? BigInt(text) : Number(text)));
  } catch {
    return fail(response, 400, 'Malformed JSON');
  }
  const plant = body as { id?: unknown; name?: unknown; tag?: unknown };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return fail(response, 400, 'Not an object');
  if (typeof plant.id !== 'bigint' || plant.id < MIN || plant.id > MAX) return fail(response, 400, 'Bad id');
  if (typeof plant.name !== 'string') return fail(response, 400, 'Bad name');
  if (plant.tag !== undefined && typeof plant.tag !== 'string') return fail(response, 400, 'Bad tag');
  const tag = plant.tag ?? null;
  const id = plant.id.toString();
  const inserted = await pool.query('INSERT INTO plant (id, name, tag) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
    id,
    plant.name,
    tag,
  ]);
  if (inserted.rowCount === 0) {
    const stored = await pool.query<{ name: string; tag: string | null }>('SELECT name, tag FROM plant WHERE id = $1', [
      id,
    ]);
    if (stored.rows[0]?.name !== plant.name || stored.rows[0]?.tag !== tag) return fail(response, 409, 'Conflict');
  }
  send(response, 200, tag === null ? { name: plant.name } : { name: plant.name, tag });
}

async function main(): Promise<void> {
  const rows = await pool.query<{ token_hash: string }>('SELECT token_hash FROM api_token WHERE revoked_at IS NULL');
  const hashes = new Set(rows.rows.map((row) => row.token_hash));
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      handle(request, response, Buffer.concat(chunks), hashes).catch(() => fail(response, 503, 'Unavailable'));
    });
  });
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  });
  process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
}

void main();
