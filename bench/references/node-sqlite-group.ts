/**
 * Reference 5, the limit of this stack: node:http + better-sqlite3 with the service's durability
 * and its group commit, and no framework. Each request is checked as in node-sqlite.ts (bearer
 * by SHA-256, exact int64 parse, validation); the creates of one event-loop turn are then written
 * in one transaction (one fsync: WAL, synchronous=FULL) on the next turn, and each is answered
 * once it is committed, with the duplicate rule decided inside that transaction. It opens a store
 * that the service's migrations created. Prints {"port": N} once listening.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { created, fail, type PlainPlant, plantOf, withBody } from './plain-create';
import { activeToken, db, findPlant, insert } from './plain-sqlite';

interface Create extends PlainPlant {
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
  batch.forEach((create, i) =>
    written[i] ? created(create.response, create) : fail(create.response, 409, 'Conflict'),
  );
}

function handle(request: IncomingMessage, response: ServerResponse, raw: Buffer): void {
  const plant = plantOf(request, response, raw, activeToken);
  if (plant === undefined) return;
  if (waiting.length === 0) setImmediate(commit);
  waiting.push({ ...plant, response });
}

const server = createServer(withBody(handle));
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
