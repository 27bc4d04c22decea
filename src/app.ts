import type { Server } from 'node:http';
import type { LoggerService, NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import { Logger as NestPinoLogger, PinoLogger } from 'nestjs-pino';
import type { Logger } from 'pino';
import { APP_CONFIG, type AppConfig } from './config/configuration';
import { ErrorResponses } from './http/error-response';
import { ClientLimits, createHttpServer } from './http/http-server';
import { OpenRequests } from './http/open-requests';
import { RequestGate } from './http/request-gate';
import { ROOT_LOGGER } from './observability/logger';
import { Metrics } from './observability/metrics';
import { setupOpenApi } from './openapi/openapi';

/** Nest's start-up narration: for debugging only. Its "started" comes before the listen, which may fail. */
const NEST_CHATTER: readonly string[] = [
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
];

class ServiceNestLogger extends NestPinoLogger {
  override log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams.at(-1);
    if (typeof context === 'string' && NEST_CHATTER.includes(context)) super.debug(message, ...optionalParams);
    else super.log(message, ...optionalParams);
  }
}

/** Nest's own logs as JSON lines through the same logger (nestjs-pino), from its first line. */
function nestLogger(logger: Logger): LoggerService {
  return new ServiceNestLogger(new PinoLogger({ pinoHttp: { logger } }), {});
}

/** How the application is made from `AppModule`: by NestFactory (main), or by a test's `Test.createTestingModule`. */
export type MakeApp = (adapter: ExpressAdapter, options: NestApplicationOptions) => Promise<NestExpressApplication>;

/**
 * What main and the tests both do with the application `make` builds: Nest on Express (its JSON
 * parser off), the gate before every route, the OpenAPI document, and Node's HTTP server over it.
 */
export async function createApp(make: MakeApp): Promise<{ app: NestExpressApplication; server: Server }> {
  // Set before Express makes its router: `/plants` only, not `/PLANTS` or `/plants/`.
  const instance = express()
    .set('case sensitive routing', true)
    .set('strict routing', true)
    .disable('x-powered-by')
    .set('etag', false);
  // Nest's lines wait for the service's logger; a start that fails says why in main's one line.
  const app = await make(new ExpressAdapter(instance), {
    bodyParser: false,
    bufferLogs: true,
    autoFlushLogs: false,
    abortOnError: false,
  });
  try {
    const logger = app.get<Logger>(ROOT_LOGGER);
    app.useLogger(nestLogger(logger));
    app.flushLogs();
    const config = app.get<AppConfig>(APP_CONFIG);
    instance.set('trust proxy', config.trustProxy);
    app.use(app.get(RequestGate).use);
    setupOpenApi(app);
    await app.init();
    const log = { logger, metrics: app.get(Metrics), maxInFlight: config.maxInFlight };
    const http = { requests: app.get(OpenRequests), errors: app.get(ErrorResponses) };
    return { app, server: createHttpServer(instance, http, log, app.get(ClientLimits)) };
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
}
