import { createServer, type Server } from 'node:http';
import type { Registry } from '@prometheus-io/client';
import type { Logger } from 'pino';
import type { AppConfig } from '../config/configuration';
import { listen, listenFailure } from './http-server';

export const METRICS_PATH = '/metrics';

/** The metrics listener, apart from the public port: `GET /metrics` and nothing else. */
function metricsServer(registry: Registry): Server {
  return createServer(
    { headersTimeout: 10_000, requestTimeout: 10_000, keepAliveTimeout: 5_000 },
    (request, response) => {
      const path = request.url?.split('?')[0];
      const plain = { 'Content-Type': 'text/plain; charset=utf-8' };
      if (path !== METRICS_PATH) return void response.writeHead(404, plain).end('Not found: use GET /metrics\n');
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return void response.writeHead(405, { Allow: 'GET', ...plain }).end('Use GET\n');
      }
      registry.metrics().then(
        (text) => response.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
        (error: unknown) => response.writeHead(503, plain).end(`Metrics unavailable: ${(error as Error).message}\n`),
      );
    },
  );
}

/** False, after a fatal line, if it cannot listen. */
export async function startMetrics(config: AppConfig, registry: Registry, logger: Logger): Promise<boolean> {
  if (config.metrics === undefined) return true;
  const server = metricsServer(registry);
  try {
    const address = await listen(server, { port: config.metrics.port, host: config.metrics.host });
    server.unref(); // never what keeps a stopping process alive
    logger.info(
      { context: 'Metrics', port: address.port },
      `metrics at http://${config.metrics.host}:${address.port}${METRICS_PATH}`,
    );
    return true;
  } catch (error) {
    logger.fatal(listenFailure(error as NodeJS.ErrnoException, config.metrics, 'METRICS_'));
    return false;
  }
}
