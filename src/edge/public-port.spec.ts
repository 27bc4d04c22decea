import { createServer, type Server } from 'node:net';
import { holdPort } from './public-port';

function bind(port: number, reusePort = false): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1', reusePort, exclusive: true }, () => resolve(server));
  });
}

const close = (server: Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()));

describe('holdPort (a cluster primary keeping the port while its workers start)', () => {
  it('keeps a free port from anything else until released, and lets its workers share it', async () => {
    const held = await holdPort(0, '127.0.0.1');
    // Another server asking for it, as the primary's own metrics listener on METRICS_PORT=0
    // could be handed it if the port were let go before the workers listen.
    const other = await bind(held.port).then(
      async (server) => {
        await close(server);
        return 'bound';
      },
      (error: NodeJS.ErrnoException) => error.code,
    );
    expect(other).toBe('EADDRINUSE');
    const worker = await bind(held.port, true);
    held.release();
    held.release(); // again: nothing
    await close(worker);
    const after = await bind(held.port);
    await close(after);
  });

  it('refuses a port already in use', async () => {
    const other = await bind(0);
    const { port } = other.address() as { port: number };
    await expect(holdPort(port, '127.0.0.1')).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await close(other);
  });
});
