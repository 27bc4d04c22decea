import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { requestIdMiddleware } from './common/request-id';
import { hardenHttpServer } from './http-server';
import { setupOpenApi } from './openapi/openapi';

/**
 * Options for `NestFactory.create` and `createNestApplication`. Nest's own JSON parser must stay
 * off: it would round ids above 2^53 before any pipe could see them (see JsonBodyInterceptor).
 */
export const NEST_APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

/** Everything about the app that is not a module: shared by `main.ts` and the e2e tests. */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestIdMiddleware);
  setupOpenApi(app);
  hardenHttpServer(app.getHttpServer());
  app.enableShutdownHooks();
  return app;
}
