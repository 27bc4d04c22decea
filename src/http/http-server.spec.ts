/**
 * @slow 11 s: waits past the 10 s idle timeout
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import pino from 'pino';
import { Metrics } from '../metrics/metrics';
import { Connections } from './connections';
import { hardenHttpServer, IDLE_SOCKET_TIMEOUT_MS } from './http-server';

jest.setTimeout(30_000);

describe('hardenHttpServer', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    // The application stands for one that waits on something slow (a store, bounded elsewhere).
    server = createServer((_request, response) => {
      setTimeout(() => response.end('{"name":"late"}'), IDLE_SOCKET_TIMEOUT_MS + 1_000);
    });
    const connections = new Connections();
    hardenHttpServer(server, pino({ level: 'silent' }), Metrics.off(), connections);
    connections.track(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('keeps the connection of a request that arrived whole while it waits for its answer, past the idle timeout', async () => {
    const response = await fetch(url, { method: 'POST', body: '{}' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('{"name":"late"}');
  });
});
