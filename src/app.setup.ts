import type { Server } from 'node:http';
import type { DynamicModule, NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import type { Logger } from 'pino';
import { AppModule } from './app.module';
import type { AppConfig } from './config/configuration';
import { openStore, StoreOpenError, storeKind } from './database/open-store';
import type { ServerLock } from './database/store-kind';
import { ENTITIES } from './entities';
import { createHttpServer, type Deadlines, DEADLINES } from './http/http-server';
import { RequestGate } from './http/request-gate';
import { nestLogger } from './observability/logger';
import { Metrics } from './observability/metrics';
import { setupOpenApi } from './openapi/openapi';

/** How the application is made from its root module: by NestFactory, or by a test's `Test.createTestingModule`. */
export type MakeApp = (
  module: DynamicModule,
  adapter: ExpressAdapter,
  options: NestApplicationOptions,
) => Promise<NestExpressApplication>;

const byNestFactory: MakeApp = (module, adapter, options) => NestFactory.create(module, adapter, options);

/** The store opened and migrated, Nest on Express (its JSON parser off), the log line and gate, the HTTP server over it. */
export async function createApp(
  config: AppConfig,
  logger: Logger,
  { deadlines = DEADLINES, make = byNestFactory }: { deadlines?: Deadlines; make?: MakeApp } = {},
): Promise<{ app: NestExpressApplication; server: Server }> {
  const kind = storeKind(config.database);
  const where = kind.describe(config.database);
  const dataSource = await openStore(config.database, ENTITIES, 'server', {
    migrated: (names) =>
      logger.info(
        { context: 'Store', migrationsApplied: names },
        `opened the ${where}; ${names.length === 0 ? 'no migration to apply' : `applied ${names.join(', ')}`}`,
      ),
  });
  // Held while the app runs, so that an operator's revert refuses to run beside it.
  let serverLock: ServerLock;
  try {
    serverLock = await kind.holdServerLock(config.database);
  } catch (error) {
    await dataSource.destroy().catch(() => undefined);
    throw new StoreOpenError(where, error);
  }
  // Set before Express makes its router: `/plants` only, not `/PLANTS` or `/plants/`.
  const instance = express()
    .set('case sensitive routing', true)
    .set('strict routing', true)
    .set('trust proxy', config.trustProxy)
    .disable('x-powered-by')
    .set('etag', false);
  let app: NestExpressApplication | undefined;
  try {
    app = await make(AppModule.forRoot(config, logger, dataSource, serverLock), new ExpressAdapter(instance), {
      bodyParser: false,
      logger: nestLogger(logger),
      abortOnError: false,
    });
    const gate = app.get(RequestGate);
    app.use(gate.use);
    setupOpenApi(app);
    await app.init();
    const log = { logger, metrics: app.get(Metrics), maxInFlight: config.maxInFlight };
    const server = createHttpServer(instance, gate, log, deadlines);
    return { app, server };
  } catch (error) {
    if (app !== undefined) await app.close().catch(() => undefined);
    else {
      await serverLock.release();
      await dataSource.destroy().catch(() => undefined);
    }
    throw error;
  }
}
