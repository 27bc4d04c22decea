/**
 * @slow 11 s: waits past the 10 s idle timeout
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import pino from 'pino';
import { Metrics } from '../observability/metrics';
import { RequestLog } from '../observability/logger';
import { AnswerOrder } from './answer-order';
import { enforceResponseDeadline, hardenHttpServer, IDLE_SOCKET_TIMEOUT_MS } from './http-server';
import { SocketHandling } from './node-sockets';

jest.setTimeout(30_000);

const CAGE = { lingeringClose: true, drainIdleGrace: true, halfOpenRequests: true, serverOptions: true };

describe('hardenHttpServer', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    // The application stands for one that waits on something slow (a store, bounded elsewhere).
    server = createServer((_request, response) => {
      setTimeout(() => response.end('{"name":"late"}'), IDLE_SOCKET_TIMEOUT_MS + 1_000);
    });
    const order = new AnswerOrder(new SocketHandling(CAGE));
    hardenHttpServer(server, new RequestLog(pino({ level: 'silent' }), Metrics.off()), order);
    order.track(server);
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

describe('enforceResponseDeadline', () => {
  it('answers 503 in the contract, rather than cutting the connection, when no answer has begun by the deadline', async () => {
    // An application that never answers: nothing the service waits for should, but if it did.
    const server = createServer(() => undefined);
    const order = new AnswerOrder(new SocketHandling(CAGE));
    order.track(server);
    enforceResponseDeadline(server, order, 1_500);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/plants`, {
        method: 'POST',
        body: '{}',
      });
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(response.status).toBe(400);
      expect(response.headers.get('connection')).toBe('close');
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toEqual({ error: 503, message: expect.any(String) });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
