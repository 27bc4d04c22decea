/**
 * Reference 1, the framework ceiling: a bare Express 5 app that answers POST /plants with a
 * JSON echo. No auth, no validation, no store. Prints {"port": N} once it listens.
 */
import express from 'express';
import type { AddressInfo } from 'node:net';

const app = express();
app.disable('x-powered-by');
app.use(express.json());
app.post('/plants', (request, response) => {
  const body = request.body as { name?: unknown; tag?: unknown };
  response.status(200).json({ name: body.name, tag: body.tag });
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
