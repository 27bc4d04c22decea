import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import type { Logger } from 'pino';
import { AppModule } from './app.module';
import type { AppConfig } from './config/configuration';
import { describeStore, openStore } from './database/open-store';
import { Connections } from './http/connections';
import { BODY_LIMIT_SETTING } from './http/json-body.decorator';
import { hardenHttpServer } from './http/http-server';
import { httpRequestChecks } from './http/request-checks';
import { nestLogger } from './logging/logging';
import { requestLogger } from './http/request-log';
import { Metrics } from './metrics/metrics';
import { setupOpenApi } from './openapi/openapi';

/**
 * The whole application, as the server runs it and as the e2e tests get it: the store opened
 * and migrated first (a StoreOpenError names DATABASE_URL and the cause), then Nest on Express.
 * Nest's own JSON parser stays off: it would round ids above 2^53 before any pipe could see
 * them (see JsonBody).
 */
export async function createApp(
  config: AppConfig,
  logger: Logger,
  connections = new Connections(),
): Promise<NestExpressApplication> {
  const dataSource = await openStore(config.database, 'server', {
    migrated: (names) =>
      logger.info(
        { context: 'Store', migrationsApplied: names },
        `opened the ${describeStore(config.database)}; ${names.length === 0 ? 'no migration to apply' : `applied ${names.join(', ')}`}`,
      ),
  });
  const metrics = config.metrics === undefined ? Metrics.off() : Metrics.on();
  // Set before Express makes its router: `/plants` only, not `/PLANTS` or `/plants/`.
  const instance = express()
    .set('case sensitive routing', true)
    .set('strict routing', true)
    .set('trust proxy', config.trustProxy)
    .set(BODY_LIMIT_SETTING, config.bodyLimit);
  try {
    const app = await NestFactory.create<NestExpressApplication>(
      AppModule.forRoot(config, dataSource, { metrics, connections }),
      new ExpressAdapter(instance),
      {
        bodyParser: false,
        logger: nestLogger(logger),
        abortOnError: false,
      },
    );
    return configureApp(app, logger, metrics, connections, config.trustProxy !== false && config.trustProxy !== 0);
  } catch (error) {
    await dataSource.destroy().catch(() => undefined);
    throw error;
  }
}

/** Everything about the app that is not a module. */
function configureApp(
  app: NestExpressApplication,
  logger: Logger,
  metrics: Metrics,
  connections: Connections,
  viaProxy: boolean,
): NestExpressApplication {
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestLogger(logger, metrics, viaProxy));
  app.use(httpRequestChecks);
  app.use(connections.middleware);
  setupOpenApi(app);
  const server = app.getHttpServer();
  hardenHttpServer(server, logger, metrics, connections);
  connections.track(server);
  return app;
}
