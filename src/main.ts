import './node-version';
import 'reflect-metadata';
import type { Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { type AppConfig, ConfigError, DEFAULTS, loadConfig, readEnvironment } from './config/configuration';
import { StoreOpenError } from './database/open-store';
import { listen, listenFailure } from './http/http-server';
import { OpenRequests, SHUTDOWN_DEADLINE_MS } from './http/open-requests';
import { createRootLogger, ROOT_LOGGER } from './observability/logger';
import { Metrics } from './observability/metrics';
import { startMetrics } from './http/metrics-server';

/** How long a drain answers (503) before it closes idle connections and stops accepting. */
const DRAIN_GRACE_MS = 250;

/** Exits with `code` once every line so far is written, or 2 s later. */
function exitAfterLogs(logger: Logger, code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 2_000).unref();
  logger.flush(() => process.exit(code));
}

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

/** Settings of earlier versions that do nothing now: one warning each, whether or not the start succeeds. */
function sayRetired(config: AppConfig, logger: Logger): void {
  for (const retired of config.retired) logger.warn({ context: 'Configuration' }, retired);
}

/** Readiness fails at once; SHUTDOWN_DELAY later the drain; exit 0 once answered (1 past the deadline). */
function onSignals(
  server: Server,
  requests: OpenRequests,
  config: AppConfig,
  close: () => Promise<void>,
  logger: Logger,
) {
  const log = logger.child({ context: 'Shutdown' });
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (!requests.stop()) return;
    const began = Date.now();
    if (config.shutdownDelayMs > 0) {
      log.info(`${signal}: not ready; serving for ${config.shutdownDelayMs} ms more before the drain`);
    }
    setTimeout(() => {
      log.error(`still busy ${SHUTDOWN_DEADLINE_MS} ms into the drain; exiting anyway`);
      exitAfterLogs(logger, 1);
    }, config.shutdownDelayMs + SHUTDOWN_DEADLINE_MS).unref();
    await sleep(config.shutdownDelayMs);
    requests.drain();
    log.info(`${signal}: finishing requests in flight, then closing the store`);
    // A kept-alive client gets its 503 and `Connection: close` first; connections still idle
    // after the grace are closed, and no new one is accepted.
    await sleep(DRAIN_GRACE_MS);
    server.close();
    try {
      await requests.answeredAll();
      await close();
    } catch (error) {
      log.error({ err: error }, 'could not close cleanly');
      return exitAfterLogs(logger, 1);
    }
    const drainMs = Date.now() - began;
    log.info({ drainMs }, `stopped: drained and closed the store in ${drainMs} ms`);
    exitAfterLogs(logger, 0);
  };
  process.on('SIGTERM', (signal) => void stop(signal));
  process.on('SIGINT', (signal) => void stop(signal));
}

async function bootstrap(): Promise<void> {
  const config = configOrExit();
  if (config === undefined) return;
  // Tracing first, when asked for, so that it sees `pg` load and the first request.
  const stopTracing = config.tracing && (await import('./observability/tracing-sdk.js')).startTracing(config.tracing);
  const [{ AppModule }, { createApp }] = await Promise.all([import('./app.module.js'), import('./app.js')]);
  let started: Awaited<ReturnType<typeof createApp>>;
  try {
    started = await createApp((adapter, options) => NestFactory.create(AppModule, adapter, options));
  } catch (error) {
    const logger = createRootLogger(config.logLevel, undefined, config.logFormat);
    sayRetired(config, logger);
    if (error instanceof StoreOpenError) logger.fatal(error.message);
    else logger.fatal({ err: error }, 'start-up failed');
    return exitAfterLogs(logger, 1);
  }
  const { app, server } = started;
  const logger = app.get<Logger>(ROOT_LOGGER);
  sayRetired(config, logger);
  const fail = async (message?: string): Promise<void> => {
    if (message !== undefined) logger.fatal(message);
    await app.close().catch(() => undefined);
    exitAfterLogs(logger, 1);
  };
  const registry = app.get(Metrics).registry;
  if (registry !== undefined && !(await startMetrics(config, registry, logger))) return fail();
  const close = async (): Promise<void> => {
    await app.close();
    await stopTracing?.().catch((error: unknown) => logger.warn({ err: error }, 'could not export the last spans'));
  };
  onSignals(server, app.get(OpenRequests), config, close, logger);
  try {
    const { port } = await listen(server, { port: config.port, host: config.host });
    logger.info(
      { context: 'Bootstrap', port },
      `Plant Store listening on http://${config.host}:${port} (docs at /docs)`,
    );
  } catch (error) {
    await fail(listenFailure(error as NodeJS.ErrnoException, config));
  }
}

void bootstrap();
