import type { IncomingMessage, ServerResponse } from 'node:http';
import { Module } from '@nestjs/common';
import type { ConfigType } from '@nestjs/config';
import { LoggerModule } from 'nestjs-pino';
import { type HttpLogger, pinoHttp, type Options } from 'pino-http';
import { appConfig } from '../config/app.config';
import type { AppConfig } from '../config/configuration';
import { requestIdOf } from './request-id';

/** The error code a failure answered with, set by the exception filter for the request log. */
export const ERROR_CODE_LOCAL = 'errorCode';

type Locals = { locals?: Record<string, unknown> };

/**
 * One JSON line per request on stdout: method, path (never the query string, which could
 * carry a token), status, the contract error code of a failure, duration and request id.
 * Headers and bodies are never logged, so neither is a token.
 */
export function httpLoggerOptions(config: Pick<AppConfig, 'logLevel'>): Options {
  return {
    level: config.logLevel,
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const existing = res.getHeader('X-Request-Id');
      if (typeof existing === 'string') return existing;
      const id = requestIdOf(req);
      res.setHeader('X-Request-Id', id);
      return id;
    },
    customAttributeKeys: { reqId: 'requestId', responseTime: 'durationMs' },
    quietReqLogger: true,
    serializers: {
      req: (req: IncomingMessage & { id?: unknown }) => ({
        method: req.method,
        path: (req.url ?? '').split('?')[0],
      }),
      res: (res: ServerResponse) => ({ status: res.statusCode }),
    },
    customProps: (_req, res) => {
      const code = (res as ServerResponse & Locals).locals?.[ERROR_CODE_LOCAL];
      return code === undefined ? {} : { error: code };
    },
    customSuccessMessage: (req, res) => `${req.method} ${(req.url ?? '').split('?')[0]} ${res.statusCode}`,
    customErrorMessage: (req, res) => `${req.method} ${(req.url ?? '').split('?')[0]} ${res.statusCode}`,
  };
}

/** The pino-http middleware; its logger is also Nest's logger, so every line is one format. */
export const HTTP_LOGGER = Symbol('HTTP_LOGGER');

/**
 * Request logging is mounted on Express itself (see `configureApp`), ahead of Swagger's routes
 * and Nest's 404 handler, so every request is logged; nestjs-pino reuses its logger
 * (`useExisting`) for Nest's own logs and request-scoped context.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      providers: [
        {
          provide: HTTP_LOGGER,
          inject: [appConfig.KEY],
          useFactory: (config: ConfigType<typeof appConfig>) => pinoHttp(httpLoggerOptions(config)),
        },
      ],
      inject: [HTTP_LOGGER],
      useFactory: (httpLogger: HttpLogger) => ({ pinoHttp: { logger: httpLogger.logger }, useExisting: true }),
    }),
  ],
})
export class LoggingModule {}
