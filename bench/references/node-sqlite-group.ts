/**
 * Reference 5, the limit of this stack: node:http + better-sqlite3 with the service's durability
 * and its group commit, and no framework. Each request is checked as in node-sqlite.ts (bearer
 * by SHA-256, exact int64 parse, validation); the creates of one event-loop turn are then written
 * in one transaction (one fsync: WAL, synchronous=FULL) on the next turn, and each is answered
 * once it is committed, with the duplicate rule decided inside that transaction. It opens a store
 * that the service's migrations created. Prints {"port": N} once listening.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { parse } from 'lossless-json';

const path = (process.env.DATABASE_URL ?? '').replace(/^sqlite:/, '');
const db = new Database(path, { timeout: 5000 });
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
const findToken = db.prepare<[string], { revoked_at: string | null }>(
  'SELECT revoked_at FROM api_token WHERE token_hash = ?',
);
const insert = db.prepare('INSERT INTO plant (id, name, tag) VALUES (?, ?, ?) ON CONFLICT DO NOTHING');
const findPlant = db.prepare<[bigint], { name: string; tag: string | null }>(
  'SELECT name, tag FROM plant WHERE id = ?',
);
const MIN = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;

interface Create {
  id: bigint;
  name: string;
  tag: string | null;
  response: ServerResponse;
}

/** The creates waiting for the next commit. */
let waiting: Create[] = [];

/** Whether each create of the batch was written or replayed (true) or conflicts (false), in order. */
const commitBatch = db.transaction((batch: Create[]): boolean[] =>
  batch.map(({ id, name, tag }) => {
    if (insert.run(id, name, tag).changes === 1) return true;
    const stored = findPlant.get(id);
    return stored?.name === name && stored.tag === tag;
  }),
);

function commit(): void {
  const batch = waiting;
  waiting = [];
  const written = commitBatch(batch);
  batch.forEach(({ name, tag, response }, i) => {
    if (!written[i]) return fail(response, 409, 'Conflict');
    const out = JSON.stringify(tag === null ? { name } : { name, tag });
    response.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(out),
    });
    response.end(out);
  });
}

function fail(response: ServerResponse, error: number, message: string): void {
  const body = JSON.stringify({ error, message });
  response.writeHead(400, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  response.end(body);
}

function handle(request: IncomingMessage, response: ServerResponse, raw: Buffer): void {
  if (request.url !== '/plants') return fail(response, 404, 'Not found');
  if (request.method !== 'POST') return fail(response, 405, 'Method not allowed');
  const token = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  const row = token === undefined ? undefined : findToken.get(createHash('sha256').update(token).digest('hex'));
  if (row === undefined || row.revoked_at !== null) return fail(response, 401, 'Unauthorized');
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
  if (waiting.length === 0) setImmediate(commit);
  waiting.push({ id: plant.id, name: plant.name, tag: plant.tag ?? null, response });
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => handle(request, response, Buffer.concat(chunks)));
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
