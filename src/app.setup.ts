import cluster from 'node:cluster';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import type { Logger } from 'pino';
import { AppModule } from './app.module';
import type { AppConfig } from './config/configuration';
import { describeStore, holdServerLock, openStore, StoreOpenError } from './database/open-store';
import type { ServerLock } from './database/store-kind';
import { FastPath } from './fast-path/fast-path';
import type { SocketHandling } from './fast-path/node-sockets';
import { AnswerOrder } from './http/answer-order';
import { ConnectionBudget, descriptorLimit, descriptorsNeeded } from './http/connection-budget';
import { Drain } from './http/drain';
import { ShutdownState } from './health/shutdown-state';
import { hardenHttpServer } from './http/http-server';
import { InFlightLimit } from './http/in-flight-limit';
import { refusedAtTheDoor } from './http/request-checks';
import { nestLogger } from './logging/logging';
import { requestLogger } from './http/request-log';
import { Metrics } from './metrics/metrics';
import { DOCS_PATH, setupOpenApi } from './openapi/openapi';
import { ENTITIES } from './entities';

/**
 * The whole application, as the server runs it and as the e2e tests get it: the store opened
 * and migrated first (a StoreOpenError names DATABASE_URL and the cause), then Nest on Express.
 * Nest's own JSON parser stays off: it would round ids above 2^53 before any pipe could see
 * them (see JsonBodyPipe).
 */
export async function createApp(
  config: AppConfig,
  logger: Logger,
  shutdown = new ShutdownState(),
): Promise<NestExpressApplication> {
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
  const metrics = config.metrics === undefined ? Metrics.off() : Metrics.on(cluster.worker?.id);
  const fastPath = FastPath.decide(config.fastPath, logger);
  const sockets = fastPath.socketHandling();
  const order = new AnswerOrder(sockets);
  const drain = new Drain(order);
  const connections = connectionBudget(config, logger);
  // Set before Express makes its router: `/plants` only, not `/PLANTS` or `/plants/`.
  const instance = express()
    .set('case sensitive routing', true)
    .set('strict routing', true)
    .set('trust proxy', config.trustProxy);
  const adapter = new ExpressAdapter(instance);
  try {
    const app = await NestFactory.create<NestExpressApplication>(
      AppModule.forRoot(config, dataSource, serverLock, { metrics, drain, connections, shutdown, fastPath }),
      adapter,
      {
        bodyParser: false,
        logger: nestLogger(logger),
        abortOnError: false,
      },
    );
    const viaProxy = config.trustProxy !== false && config.trustProxy !== 0;
    const limit = new InFlightLimit(config.maxInFlight);
    return configureApp(app, adapter, logger, metrics, { order, drain, limit, sockets, connections }, viaProxy);
  } catch (error) {
    await serverLock.release();
    await dataSource.destroy().catch(() => undefined);
    throw error;
  }
}

/** Everything about the app that is not a module. */
function configureApp(
  app: NestExpressApplication,
  adapter: ExpressAdapter,
  logger: Logger,
  metrics: Metrics,
  {
    order,
    drain,
    limit,
    sockets,
    connections,
  }: {
    order: AnswerOrder;
    drain: Drain;
    limit: InFlightLimit;
    sockets: SocketHandling;
    connections: ConnectionBudget;
  },
  viaProxy: boolean,
): NestExpressApplication {
  app.disable('x-powered-by');
  app.set('etag', false);
  // Every request's first steps, in order: its id and log line, then the refusals that come
  // before routing. They run as Nest's request hook, inside the Express layer Nest's adapter
  // puts first for every request anyway: each further layer a request passes through costs it
  // Express's matching and a few objects (see docs/performance-log.md).
  const logRequest = requestLogger(logger, metrics, viaProxy, DOCS_PATH);
  adapter.setOnRequestHook((request, response, next) =>
    logRequest(request, response, () => {
      if (
        !refusedAtTheDoor(request, response) &&
        !drain.refused(request, response) &&
        !limit.refused(request, response)
      ) {
        next();
      }
    }),
  );
  setupOpenApi(app);
  const server = app.getHttpServer();
  hardenHttpServer(server, logger, metrics, order);
  sockets.adopt(server, () => drain.closeIdleConnections());
  order.track(server);
  connections.watch(server, order, logger, metrics);
  return app;
}

/**
 * The public port's share of the descriptors this process may open; says in one line, at start,
 * what to raise when that is less than MAX_IN_FLIGHT needs.
 */
function connectionBudget(config: AppConfig, logger: Logger): ConnectionBudget {
  const limit = descriptorLimit();
  const budget = new ConnectionBudget(limit);
  const needed = descriptorsNeeded(config.maxInFlight);
  if (limit !== undefined && limit < needed) {
    logger.warn(
      { context: 'Connections', limit, needed, listeners: budget.listeners, budget: budget.connections },
      `the descriptor limit is ${limit}, below the ${needed} that MAX_IN_FLIGHT=${config.maxInFlight} needs: raise it (ulimit -n, LimitNOFILE=, a container's --ulimit nofile=) or lower MAX_IN_FLIGHT; until then the port has ${budget.listeners} listening sockets and connections past ${budget.connections} are answered 503`,
    );
  }
  return budget;
}
