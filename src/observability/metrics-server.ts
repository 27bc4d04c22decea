import { createServer, type Server } from 'node:http';
import { ClusterRegistry, type Registry } from '@prometheus-io/client';
import type { Logger } from 'pino';
import type { AppConfig } from '../config/configuration';
import { listen, listenFailure } from '../net/listen';

export const METRICS_PATH = '/metrics';

/** What one scrape answers: the text and its content type. */
export interface Scrape {
  contentType: string;
  metrics(): Promise<string>;
}

/** A scrape of this process's own registry (WORKERS=1). */
export function processScrape(registry: Registry): Scrape {
  return { contentType: registry.contentType, metrics: () => registry.metrics() };
}

/**
 * A scrape of every worker, summed (WORKERS > 1, in the primary): the client's ClusterRegistry
 * asks each worker for its registry over the cluster's IPC channel, and keeps the counts of
 * workers that have exited, so a restarted worker does not make a counter go back.
 */
export function clusterScrape(): Scrape {
  const registry = new ClusterRegistry();
  return { contentType: registry.contentType, metrics: () => registry.clusterMetrics() };
}

/** In a worker: answer the primary's scrapes with this registry. */
export function joinClusterScrape(registry: Registry): void {
  ClusterRegistry.setRegistries(registry);
  new ClusterRegistry(); // starts answering the primary
}

/**
 * The metrics listener, apart from the public port so that metrics never share its surface:
 * `GET /metrics` and nothing else.
 */
function metricsServer(scrape: Scrape): Server {
  const server = createServer((request, response) => {
    const path = request.url?.split('?')[0];
    if (path !== METRICS_PATH) {
      response.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found: use GET /metrics\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { Allow: 'GET', 'Content-Type': 'text/plain; charset=utf-8' }).end('Use GET\n');
      return;
    }
    scrape.metrics().then(
      (text) => response.writeHead(200, { 'Content-Type': scrape.contentType }).end(text),
      (error: unknown) =>
        response
          .writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8' })
          .end(`Metrics unavailable: ${(error as Error).message}\n`),
    );
  });
  // A scrape is small and quick: a client that holds a connection open gets nothing for it.
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  return server;
}

/**
 * Starts the metrics listener when METRICS_PORT is set, with `scrape()`, and says where. Resolves
 * false, after a fatal line naming METRICS_PORT, if it cannot listen; true otherwise.
 */
export async function startMetrics(config: AppConfig, scrape: () => Scrape, logger: Logger): Promise<boolean> {
  if (config.metrics === undefined) return true;
  const server = metricsServer(scrape());
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
