import 'reflect-metadata';
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { configureApp, NEST_APP_OPTIONS } from './app.setup';
import { Draining } from './common/draining';
import { type AppConfig, ConfigError, loadConfig } from './config/configuration';
import { dataSourceOptions, openDataSource } from './database/data-source-options';

/** Past this, a shutdown that is still waiting on something gives up (exit code 1). */
const SHUTDOWN_DEADLINE_MS = 10_000;
const SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

function configOrExit(): AppConfig {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

/** One line of JSON on stdout, like the logger's, for the cluster primary (which has no Nest). */
function primaryLog(fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, context: 'Cluster', ...fields })}\n`);
}

/** Serves requests: the whole app in this process, or in one cluster worker. */
async function serve(config: AppConfig): Promise<void> {
  const draining = new Draining();
  const app = configureApp(await NestFactory.create<NestExpressApplication>(AppModule, NEST_APP_OPTIONS), draining);
  const logger = app.get(Logger);

  /**
   * SIGTERM/SIGINT: refuse new requests, let those in flight finish, close the store, exit 0.
   * (Nest's enableShutdownHooks would re-raise the signal and so exit 143.)
   */
  const shutdown = (signal: NodeJS.Signals): void => {
    if (draining.active) return;
    draining.start();
    logger.log(`${signal}: finishing requests in flight, then closing the store`, 'Shutdown');
    setTimeout(() => {
      logger.error(`still busy after ${SHUTDOWN_DEADLINE_MS} ms; exiting anyway`, undefined, 'Shutdown');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error(error, 'Shutdown');
        process.exit(1);
      },
    );
  };
  for (const signal of SIGNALS) process.on(signal, shutdown);

  await app.listen(config.port, config.host);
  const { port } = app.getHttpServer().address() as AddressInfo;
  if (cluster.isWorker) {
    logger.log(`worker ${cluster.worker?.id} serving`, 'Bootstrap');
  } else {
    logger.log({ port, msg: `Plant Store listening on http://${config.host}:${port} (docs at /docs)` }, 'Bootstrap');
  }
}

/**
 * WORKERS > 1: this process migrates the store once, then forks the workers, which share the
 * port; it restarts a worker that dies, and on SIGTERM/SIGINT waits for all to drain.
 */
async function supervise(config: AppConfig): Promise<void> {
  await (await openDataSource(dataSourceOptions(config.database))).destroy();
  let stopping = false;
  let listening = 0;
  cluster.on('listening', (_worker, address) => {
    if (++listening === config.workers) {
      primaryLog({ port: address.port, msg: `Plant Store listening on http://${config.host}:${address.port} with ${config.workers} workers (docs at /docs)` });
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    primaryLog({ level: 50, msg: `worker ${worker.id} exited (${signal ?? code}); starting another` });
    cluster.fork();
  });
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    primaryLog({ msg: `${signal}: draining ${config.workers} workers` });
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    setTimeout(() => process.exit(1), SHUTDOWN_DEADLINE_MS + 1_000).unref();
  };
  for (const signal of SIGNALS) process.on(signal, stop);
  for (let i = 0; i < config.workers; i++) cluster.fork();
}

async function bootstrap(): Promise<void> {
  const config = configOrExit();
  if (config.workers > 1 && cluster.isPrimary) await supervise(config);
  else await serve(config);
}

void bootstrap();
