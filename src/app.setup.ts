import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import type { Logger as PinoLogger } from 'pino';
import { Draining } from './common/draining';
import { requestLogger, ROOT_LOGGER } from './common/logging';
import { hardenHttpServer } from './http-server';
import { setupOpenApi } from './openapi/openapi';

/**
 * Options for `NestFactory.create` and `createNestApplication`. Nest's own JSON parser must stay
 * off: it would round ids above 2^53 before any pipe could see them (see JsonBodyInterceptor).
 */
export const NEST_APP_OPTIONS: NestApplicationOptions = { bodyParser: false, bufferLogs: true };

/** Everything about the app that is not a module: shared by `main.ts` and the e2e tests. */
export function configureApp(app: NestExpressApplication, draining = new Draining()): NestExpressApplication {
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  app.set('etag', false);
  const logger = app.get<PinoLogger>(ROOT_LOGGER);
  app.use(requestLogger(logger));
  app.use(draining.middleware);
  setupOpenApi(app);
  hardenHttpServer(app.getHttpServer(), logger);
  return app;
}
