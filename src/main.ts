import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { configureApp, NEST_APP_OPTIONS } from './app.setup';
import { Draining } from './common/draining';
import { type AppConfig, ConfigError, loadConfig } from './config/configuration';

/** Past this, a shutdown that is still waiting on something gives up (exit code 1). */
const SHUTDOWN_DEADLINE_MS = 10_000;

function configOrExit(): AppConfig {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

async function bootstrap(): Promise<void> {
  const config = configOrExit();
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
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);

  await app.listen(config.port, config.host);
  const { port } = app.getHttpServer().address() as AddressInfo;
  logger.log({ port, msg: `Plant Store listening on http://${config.host}:${port} (docs at /docs)` }, 'Bootstrap');
}

void bootstrap();
