import './node-version';
import './compile-cache';
import 'reflect-metadata';
import cluster from 'node:cluster';
import type { Logger } from 'pino';
import { type AppConfig, ConfigError, DEFAULTS, loadConfig, readEnvironment } from './config/configuration';
import { createRootLogger, exitAfterLogs } from './observability/logger';
import { clusterScrape, startMetrics } from './observability/metrics-server';
import { listenFailure } from './net/listen';
import { type HeldPort, holdPort, isWorkerServing } from './edge/public-port';
import { SHUTDOWN_DEADLINE_MS, SIGNALS } from './shutdown';

/**
 * The configuration, from the environment over `.env`; or one JSON line naming the bad variable,
 * exit 1 once it is written, and undefined meanwhile.
 */
function configOrExit(): AppConfig | undefined {
  try {
    return loadConfig(readEnvironment());
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const logger = createRootLogger(DEFAULTS.LOG_LEVEL);
    logger.fatal(`Configuration error: ${error.message}`);
    exitAfterLogs(logger, 1);
    return undefined;
  }
}

/**
 * WORKERS > 1: this process holds the port (checked free; chosen for PORT=0) and forks the
 * workers, which each listen on it with sockets of their own (PublicPort; and apply pending
 * migrations, safely, whichever starts first); it restarts a worker that dies while serving,
 * stops everything if one cannot start (a port in use would otherwise be a crash loop), and on
 * SIGTERM/SIGINT waits for all to drain. It loads nothing of the app itself.
 */
function supervise(config: AppConfig, logger: Logger, { port, release }: HeldPort): void {
  const log = logger.child({ context: 'Cluster' });
  let stopping = false;
  let exitCode = 0;
  const serving = new Set<number>();
  let announced = false;
  cluster.on('message', (worker, message: unknown) => {
    if (!isWorkerServing(message)) return;
    release(); // the workers hold the port from now on
    serving.add(worker.id);
    if (announced) {
      log.info({ port }, `worker ${worker.id} serving in place of the one that exited`);
    } else if (serving.size === config.workers) {
      announced = true;
      log.info(
        { port },
        `Plant Store listening on http://${config.host}:${port} with ${config.workers} workers (docs at /docs)`,
      );
    }
  });
  const fork = (): void => void cluster.fork({ PORT: String(port) });
  // Node drops a worker from cluster.workers once it has both exited and disconnected, in either
  // order: at the last worker's 'exit' it may still be listed, so its process is what counts.
  const everyWorkerExited = (): boolean =>
    Object.values(cluster.workers ?? {}).every((worker) => worker === undefined || worker.isDead());
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping && !serving.has(worker.id)) {
      // It said why in its own last line; starting another would only fail the same way.
      stopping = true;
      exitCode = 1;
      log.fatal(`worker ${worker.id} could not start (exit ${signal ?? code}); stopping`);
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
      setTimeout(() => exitAfterLogs(logger, 1), SHUTDOWN_DEADLINE_MS).unref();
    }
    if (stopping) {
      if (everyWorkerExited()) {
        log.info(`stopped: every worker has exited (exit ${exitCode})`);
        exitAfterLogs(logger, exitCode);
      }
      return;
    }
    serving.delete(worker.id);
    log.error(`worker ${worker.id} exited (${signal ?? code}); starting another`);
    fork();
  });
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: draining ${config.workers} workers`);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    setTimeout(() => exitAfterLogs(logger, 1), config.shutdownDelayMs + SHUTDOWN_DEADLINE_MS + 1_000).unref();
  };
  for (const signal of SIGNALS) process.on(signal, stop);
  for (let i = 0; i < config.workers; i++) fork();
}

/**
 * WORKERS > 1: the metrics listener, in the primary, summing every worker; the instance's
 * rate-limit count, in the primary, unless Redis keeps the fleet's; then the workers.
 */
async function startCluster(config: AppConfig, logger: Logger): Promise<void> {
  let port: HeldPort;
  try {
    port = await holdPort(config.port, config.host);
  } catch (error) {
    logger.fatal(listenFailure(error as NodeJS.ErrnoException, config));
    exitAfterLogs(logger, 1);
    return;
  }
  if (!(await startMetrics(config, clusterScrape, logger))) {
    exitAfterLogs(logger, 1);
    return;
  }
  if (config.rateLimit?.counts === 'instance') {
    await (await import('./rate-limit/cluster-throttler.storage.js')).keepRateLimitCounts(cluster);
  }
  supervise(config, logger, port);
}

async function bootstrap(): Promise<void> {
  const config = configOrExit();
  if (config === undefined) return;
  const logger = createRootLogger(config.logLevel, undefined, config.logFormat);
  if (config.workers > 1 && cluster.isPrimary) {
    await startCluster(config, logger);
    return;
  }
  // Tracing first, when asked for (its SDK loaded only then), so that it sees `pg` load and the
  // first request; then the app, loaded only here, so that a cluster primary never loads it.
  const stopTracing =
    config.tracing === undefined
      ? undefined
      : (await import('./observability/tracing-sdk.js')).startTracing(
          config.tracing.endpoint,
          config.tracing.serviceName,
        );
  const { serve } = await import('./server.js');
  await serve(config, logger, stopTracing);
}

void bootstrap();
