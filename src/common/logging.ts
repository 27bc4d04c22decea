import type { IncomingMessage } from 'node:http';
import { Module } from '@nestjs/common';
import type { ConfigType } from '@nestjs/config';
import type { NextFunction, Request, Response } from 'express';
import { LoggerModule } from 'nestjs-pino';
import pino, { type Logger } from 'pino';
import { appConfig } from '../config/app.config';
import type { AppConfig } from '../config/configuration';
import { requestIdOf } from './request-id';

/** The error code a failure answered with, set by the exception filter for the request log. */
export const ERROR_CODE_LOCAL = 'errorCode';

/** The process's one pino logger: request lines and Nest's own logs go through it. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

export function createRootLogger(config: Pick<AppConfig, 'logLevel'>): Logger {
  return pino({ level: config.logLevel });
}

const pathOf = (request: IncomingMessage): string => {
  const url = request.url ?? '';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query); // never the query string: it could carry a token
};

/**
 * Gives every response its X-Request-Id and writes one JSON line per request when it ends:
 * request id, method, path, status, the contract error code of a failure, and duration.
 * Headers and bodies are never logged, so neither is a token. (pino-http does this too, but
 * builds three child loggers per request; one line is all we need, and it is a hot path.)
 */
export function requestLogger(logger: Logger) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(request);
    response.setHeader('X-Request-Id', requestId);
    response.once('finish', () => {
      if (!logger.isLevelEnabled('info')) return;
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      const error: unknown = response.locals[ERROR_CODE_LOCAL];
      const path = pathOf(request);
      logger.info(
        {
          requestId,
          req: { method: request.method, path },
          res: { status: response.statusCode },
          ...(error === undefined ? {} : { error }),
          durationMs: Math.round(durationMs * 100) / 100,
        },
        `${request.method} ${path} ${response.statusCode}`,
      );
    });
    next();
  };
}

/**
 * Nest's own logs as JSON lines through the same pino logger (nestjs-pino). Request lines come
 * from `requestLogger`, mounted on Express itself in `configureApp`, ahead of Swagger's routes
 * and Nest's 404 handler, so every request is logged.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      providers: [
        {
          provide: ROOT_LOGGER,
          inject: [appConfig.KEY],
          useFactory: (config: ConfigType<typeof appConfig>) => createRootLogger(config),
        },
      ],
      inject: [ROOT_LOGGER],
      useFactory: (logger: Logger) => ({ pinoHttp: { logger, autoLogging: false }, forRoutes: [] }),
    }),
  ],
})
export class LoggingModule {}
