// A TCP port free on 127.0.0.1 right now, for a process that must be told its port before it
// starts: the tests', the bench's, PgBouncer's and HAProxy's.
import { createServer } from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
