import { inspect } from 'node:util';
import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { recordFailure } from '../observability/tracing';
import { ApiError, StoreUnavailableError } from '../errors/api-error';
import { type ErrorBody, ErrorCode, isErrorCode, NOT_FOUND } from '../errors/error-codes';
import { type ErrorHeaders, writeError } from './error-response';

interface Failure {
  body: ErrorBody;
  headers: ErrorHeaders;
  /** Logged with its cause; client errors and outages are not. */
  unexpected?: unknown;
}

export function describeFailure(exception: unknown): Failure {
  if (exception instanceof ApiError) {
    return { body: { error: exception.code, message: exception.message }, headers: exception.headers };
  }
  if (exception instanceof StoreUnavailableError) {
    // StoreOutage logs an outage once, not each request that meets it.
    return {
      body: { error: ErrorCode.ServiceUnavailable, message: 'The store is unavailable; try again shortly' },
      headers: { 'Retry-After': '1' },
    };
  }
  if (exception instanceof HttpException && exception.getStatus() < 500) {
    const status = exception.getStatus();
    const code: ErrorCode = isErrorCode(status) ? status : ErrorCode.BadRequest;
    return { body: { error: code, message: code === 404 ? NOT_FOUND.message : exception.message }, headers: {} };
  }
  return {
    body: { error: ErrorCode.InternalServerError, message: 'Internal server error' },
    headers: {},
    unexpected: exception,
  };
}

/** Every failure, whatever raised it, leaves as HTTP 400 with the contract's `{error, message}`. */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Failure');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const failure = describeFailure(exception);
    if (failure.unexpected !== undefined) {
      const requestId = String(response.getHeader('X-Request-Id'));
      this.logger.error(
        `${failure.body.error} for ${request.method} ${request.path.slice(0, 256)} (request ${requestId})`,
        failure.unexpected instanceof Error ? failure.unexpected.stack : inspect(failure.unexpected),
      );
    }
    if (failure.body.error >= 500) recordFailure(exception);
    writeError(request, response, failure.body, failure.headers);
  }
}
