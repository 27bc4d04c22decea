import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { configureApp, NEST_APP_OPTIONS } from './app.setup';
import { Draining } from './common/draining';
import type { AppConfig } from './config/configuration';
import { SHUTDOWN_DEADLINE_MS, SIGNALS } from './shutdown';

/** Serves requests: the whole app in this process, or in one cluster worker. */
export async function serve(config: AppConfig): Promise<void> {
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
