/**
 * Reference 2, the storage baseline: our whole job on node:http + better-sqlite3, with one
 * transaction per request and no framework: bearer check by SHA-256, exact int64 parse,
 * validation, durable insert (WAL, synchronous=FULL), the duplicate rule, the Error body.
 * It opens a store that the service's migrations created. Prints {"port": N} once listening.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { created, fail, plantOf, withBody } from './plain-create';
import { activeToken, findPlant, insert } from './plain-sqlite';

function handle(request: IncomingMessage, response: ServerResponse, raw: Buffer): void {
  const plant = plantOf(request, response, raw, activeToken);
  if (plant === undefined) return;
  if (insert.run(plant.id, plant.name, plant.tag).changes === 0) {
    const stored = findPlant.get(plant.id);
    if (stored?.name !== plant.name || stored.tag !== plant.tag) return fail(response, 409, 'Conflict');
  }
  created(response, plant);
}

const server = createServer(withBody(handle));
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
