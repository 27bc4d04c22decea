/**
 * What the plain references (node-sqlite, node-sqlite-group, node-pg) share: the answers, and a
 * create's checks around the token's look-up, in the contract's order. Each reference looks the
 * token up and stores the plant its own way.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse } from 'lossless-json';

const MIN = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;

export interface PlainPlant {
  id: bigint;
  name: string;
  tag: string | null;
}

export function send(response: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  response.end(body);
}

export function fail(response: ServerResponse, error: number, message: string): void {
  send(response, 400, { error, message });
}

export function created(response: ServerResponse, { name, tag }: PlainPlant): void {
  send(response, 200, tag === null ? { name } : { name, tag });
}

/** The SHA-256 (hex) of the request's bearer token; undefined once a failure is answered. */
function bearerHash(request: IncomingMessage, response: ServerResponse): string | undefined {
  if (request.url !== '/plants') return void fail(response, 404, 'Not found');
  if (request.method !== 'POST') return void fail(response, 405, 'Method not allowed');
  const token = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (token === undefined) return void fail(response, 401, 'Unauthorized');
  return createHash('sha256').update(token).digest('hex');
}

/**
 * The plant a create carries, once its token is one `active` knows (by its SHA-256, hex);
 * undefined once a failure is answered.
 */
export function plantOf(
  request: IncomingMessage,
  response: ServerResponse,
  raw: Buffer,
  active: (hash: string) => boolean,
): PlainPlant | undefined {
  const hash = bearerHash(request, response);
  if (hash === undefined) return undefined;
  if (!active(hash)) return void fail(response, 401, 'Unauthorized');
  return readPlant(request, response, raw);
}

/** The plant a request's body holds (exact int64 id); undefined once a failure is answered. */
function readPlant(request: IncomingMessage, response: ServerResponse, raw: Buffer): PlainPlant | undefined {
  if (!/^application\/json\b/.test(request.headers['content-type'] ?? '')) {
    return void fail(response, 415, 'Unsupported');
  }
  let body: unknown;
  try {
    body = parse(raw.toString('utf8'), null, (text) => (/^-?\d+$/.test(text) ? BigInt(text) : Number(text)));
  } catch {
    return void fail(response, 400, 'Malformed JSON');
  }
  const plant = body as { id?: unknown; name?: unknown; tag?: unknown };
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return void fail(response, 400, 'Not an object');
  if (typeof plant.id !== 'bigint' || plant.id < MIN || plant.id > MAX) return void fail(response, 400, 'Bad id');
  if (typeof plant.name !== 'string') return void fail(response, 400, 'Bad name');
  if (plant.tag !== undefined && typeof plant.tag !== 'string') return void fail(response, 400, 'Bad tag');
  return { id: plant.id, name: plant.name, tag: plant.tag ?? null };
}

/** Calls `handle` with each request's whole body. */
export function withBody(
  handle: (request: IncomingMessage, response: ServerResponse, raw: Buffer) => unknown,
): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => handle(request, response, Buffer.concat(chunks)));
  };
}
