import { Global, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { ROOT_LOGGER } from '../observability/logger';
import { Admission } from './admission';
import { AnswerOrder } from './answer-order';
import { Drain } from './drain';
import { SocketHandling } from './node-sockets';
import { ConnectionBudget, PublicPort } from './public-port';

/** What the edge is made of; `attachEdge` puts it around the HTTP server once Nest has made it. */
@Global()
@Module({
  providers: [
    { provide: SocketHandling, inject: [ROOT_LOGGER], useFactory: (logger: Logger) => SocketHandling.decide(logger) },
    AnswerOrder,
    Drain,
    Admission,
    ConnectionBudget,
    PublicPort,
  ],
  exports: [AnswerOrder, Drain, Admission, ConnectionBudget, PublicPort, SocketHandling],
})
export class EdgeModule {}
