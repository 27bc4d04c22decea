import type { NestExpressApplication } from '@nestjs/platform-express';
import type { ExpressAdapter } from '@nestjs/platform-express';
import { RequestLog } from '../observability/logger';
import { Admission } from './admission';
import { AnswerOrder } from './answer-order';
import { Drain } from './drain';
import { hardenHttpServer } from './http-server';
import { SocketHandling } from './node-sockets';
import { ConnectionBudget } from './public-port';

/**
 * Puts the edge (see this folder's README) around the HTTP server of `app`, whose parts
 * EdgeModule made: call it once, after NestFactory.create and before listening. `docsPath`:
 * where Swagger UI is served, one route for the metrics.
 */
export function attachEdge(app: NestExpressApplication, docsPath: string): void {
  const order = app.get(AnswerOrder);
  const admission = app.get(Admission);
  const budget = app.get(ConnectionBudget);
  (app.getHttpAdapter() as ExpressAdapter).setOnRequestHook(admission.requestHook(docsPath));
  const server = app.getHttpServer();
  hardenHttpServer(server, app.get(RequestLog), order);
  const drain = app.get(Drain);
  app.get(SocketHandling).adopt(server, () => drain.closeIdleConnections());
  order.track(server);
  budget.watch(server);
}
