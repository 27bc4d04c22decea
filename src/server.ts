import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { createApp } from './app.setup';
import type { AppConfig } from './config/configuration';
import { StoreOpenError } from './database/open-store';
import { Drain } from './edge/drain';
import { listenFailure } from './net/listen';
import { PublicPort, workerServing } from './edge/public-port';
import { ShutdownState } from './health/shutdown-state';
import { exitAfterLogs } from './observability/logger';
import { Metrics } from './observability/metrics';
import { joinClusterScrape, processScrape, startMetrics } from './observability/metrics-server';
import { gracefulShutdown, SIGNALS } from './shutdown';

/**
 * Serves requests: the whole app in this process, or in one cluster worker. Exits 1 if it cannot.
 * `stopTracing`: the tracing SDK's shutdown, when `main.ts` started it.
 */
export async function serve(
  config: AppConfig,
  logger: Logger,
  stopTracing: (() => Promise<void>) | undefined,
): Promise<void> {
  let app: Awaited<ReturnType<typeof createApp>>;
  try {
    app = await createApp(config, logger);
    await app.init();
  } catch (error) {
    if (error instanceof StoreOpenError) logger.fatal(error.message);
    else logger.fatal({ err: error }, 'start-up failed');
    exitAfterLogs(logger, 1);
    return;
  }
  const { registry } = app.get(Metrics);
  if (registry !== undefined && cluster.isWorker) {
    joinClusterScrape(registry);
  } else if (registry !== undefined && !(await startMetrics(config, () => processScrape(registry), logger))) {
    await app.close().catch(() => undefined);
    exitAfterLogs(logger, 1);
    return;
  }

  // The spans still batched are exported once the store is closed, before the process exits.
  const closeApp = async (): Promise<void> => {
    await app.close();
    await stopTracing?.().catch((error: unknown) =>
      logger.warn({ context: 'Tracing', err: error }, 'could not export the last spans'),
    );
  };
  const publicPort = app.get(PublicPort);
  const shutdown = gracefulShutdown(
    publicPort,
    app.get(Drain),
    app.get(ShutdownState),
    config.shutdownDelayMs,
    closeApp,
    logger,
  );
  for (const signal of SIGNALS) process.on(signal, shutdown);

  let address: AddressInfo;
  try {
    // A worker's PORT is the one its primary chose and holds for the cluster.
    address = await publicPort.listen(config.port, config.host, cluster.isWorker);
  } catch (error) {
    logger.fatal(listenFailure(error as NodeJS.ErrnoException, config));
    await app.close().catch(() => undefined);
    exitAfterLogs(logger, 1);
    return;
  }
  if (cluster.isWorker) {
    logger.info({ context: 'Bootstrap', port: address.port }, `worker ${cluster.worker?.id} serving`);
    process.send?.(workerServing());
  } else {
    logger.info(
      { context: 'Bootstrap', port: address.port },
      `Plant Store listening on http://${config.host}:${address.port} (docs at /docs)`,
    );
  }
}
