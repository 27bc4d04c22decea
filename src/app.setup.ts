import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import type { Logger } from 'pino';
import { AppModule } from './app.module';
import type { AppConfig } from './config/configuration';
import { describeStore, holdServerLock, openStore, StoreOpenError } from './database/open-store';
import type { ServerLock } from './database/store-kind';
import { attachEdge } from './edge/edge';
import { ENTITIES } from './entities';
import { nestLogger } from './observability/logger';
import { DOCS_PATH, setupOpenApi } from './openapi/openapi';

/**
 * The whole application, as the server runs it and as the e2e tests get it: the store opened
 * and migrated first (a StoreOpenError names DATABASE_URL and the cause), then Nest on Express,
 * then the edge around its HTTP server. Nest's own JSON parser stays off: it would round ids
 * above 2^53 before any pipe could see them (see JsonBodyPipe).
 */
export async function createApp(config: AppConfig, logger: Logger): Promise<NestExpressApplication> {
  const dataSource = await openStore(config.database, ENTITIES, 'server', {
    migrated: (names) =>
      logger.info(
        { context: 'Store', migrationsApplied: names },
        `opened the ${describeStore(config.database)}; ${names.length === 0 ? 'no migration to apply' : `applied ${names.join(', ')}`}`,
      ),
  });
  // Held while the app runs, so that an operator's revert refuses to run beside it.
  let serverLock: ServerLock;
  try {
    serverLock = await holdServerLock(config.database);
  } catch (error) {
    await dataSource.destroy().catch(() => undefined);
    throw new StoreOpenError(describeStore(config.database), error);
  }
  // Set before Express makes its router: `/plants` only, not `/PLANTS` or `/plants/`.
  const instance = express()
    .set('case sensitive routing', true)
    .set('strict routing', true)
    .set('trust proxy', config.trustProxy);
  try {
    const app = await NestFactory.create<NestExpressApplication>(
      AppModule.forRoot(config, logger, dataSource, serverLock),
      new ExpressAdapter(instance),
      { bodyParser: false, logger: nestLogger(logger), abortOnError: false },
    );
    app.disable('x-powered-by');
    app.set('etag', false);
    setupOpenApi(app);
    attachEdge(app, DOCS_PATH);
    return app;
  } catch (error) {
    await serverLock.release();
    await dataSource.destroy().catch(() => undefined);
    throw error;
  }
}
