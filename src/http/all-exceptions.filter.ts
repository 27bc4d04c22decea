import { inspect } from 'node:util';
import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { recordFailure } from '../observability/tracing';
import { ApiError, StoreUnavailableError } from '../errors/api-error';
import { type ErrorBody, ErrorCode, isErrorCode, NOT_FOUND } from '../errors/error-codes';
import { ErrorResponses, type ErrorHeaders } from './error-response';

interface Failure {
  body: ErrorBody;
  headers: ErrorHeaders;
  /** Logged with its cause; client errors and outages are not. */
  unexpected?: unknown;
}

/** What an HttpException says: its message, or the messages it was given as a list (class-validator's). */
function messageOf(exception: HttpException): string {
  const given = exception.getResponse();
  const list = typeof given === 'object' ? (given as { message?: unknown }).message : undefined;
  return Array.isArray(list) && list.every((item) => typeof item === 'string') ? list.join('; ') : exception.message;
}

export function describeFailure(exception: unknown, request: Pick<Request, 'route'>): Failure {
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
  const status = exception instanceof HttpException ? exception.getStatus() : ErrorCode.InternalServerError;
  if (
    exception instanceof HttpException &&
    status !== ErrorCode.InternalServerError &&
    (status < 500 || isErrorCode(status))
  ) {
    // Express names the route a request matched: a 404 without one is the router's own.
    if (status === ErrorCode.NotFound && request.route === undefined) return { body: NOT_FOUND, headers: {} };
    // A status the error table lacks is a client's error all the same (add a row to name it).
    const code: ErrorCode = isErrorCode(status) ? status : ErrorCode.BadRequest;
    const headers: ErrorHeaders = code === ErrorCode.ServiceUnavailable ? { 'Retry-After': '1' } : {};
    return { body: { error: code, message: messageOf(exception) }, headers };
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

  constructor(private readonly errors: ErrorResponses) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const failure = describeFailure(exception, request);
    if (failure.unexpected !== undefined) {
      const requestId = String(response.getHeader('X-Request-Id'));
      this.logger.error(
        `${failure.body.error} for ${request.method} ${request.path.slice(0, 256)} (request ${requestId})`,
        failure.unexpected instanceof Error ? failure.unexpected.stack : inspect(failure.unexpected),
      );
    }
    if (failure.body.error >= 500) recordFailure(exception);
    this.errors.write(request, response, failure.body, failure.headers);
  }
}
