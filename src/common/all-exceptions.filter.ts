import { inspect } from 'node:util';
import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isStoreUnavailable } from '../database/store-errors';
import { ApiError } from './api-error';
import { ERROR_CODE_LOCAL } from './logging';
import { type ErrorBody, ErrorCode, isErrorCode } from './error-codes';

interface Failure {
  body: ErrorBody;
  headers: Readonly<Record<string, string>>;
  /** Unexpected failures are logged with their cause; client errors are not. */
  cause?: unknown;
}

const GENERIC_MESSAGES: Partial<Record<ErrorCode, string>> = {
  404: 'Not found: no such path',
  413: 'Request body is too large',
};

/** Errors from raw-body / body-parser are plain errors carrying `type` and `status`. */
function bodyReadFailure(error: object): Failure | undefined {
  const { type, status } = error as { type?: unknown; status?: unknown };
  if (typeof type !== 'string' || typeof status !== 'number') return undefined;
  switch (type) {
    case 'entity.too.large':
      return { body: { error: ErrorCode.PayloadTooLarge, message: 'Request body is too large' }, headers: {} };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return { body: { error: ErrorCode.UnsupportedMediaType, message: 'Unsupported body encoding' }, headers: {} };
    case 'request.aborted':
    case 'request.size.invalid':
      return { body: { error: ErrorCode.BadRequest, message: 'Request body was incomplete' }, headers: {} };
    default:
      return status >= 400 && status < 500
        ? { body: { error: ErrorCode.BadRequest, message: 'Request body could not be read' }, headers: {} }
        : undefined;
  }
}

export function describeFailure(exception: unknown): Failure {
  if (exception instanceof ApiError) {
    return { body: { error: exception.code, message: exception.message }, headers: exception.headers };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status >= 500) return internalFailure(exception);
    const code: ErrorCode = isErrorCode(status) ? status : ErrorCode.BadRequest;
    return { body: { error: code, message: GENERIC_MESSAGES[code] ?? exception.message }, headers: {} };
  }
  if (typeof exception === 'object' && exception !== null) {
    const bodyFailure = bodyReadFailure(exception);
    if (bodyFailure) return bodyFailure;
  }
  return internalFailure(exception);
}

function internalFailure(cause: unknown): Failure {
  if (isStoreUnavailable(cause)) {
    return {
      body: { error: ErrorCode.ServiceUnavailable, message: 'The store is unavailable; try again shortly' },
      headers: { 'Retry-After': '1' },
      cause,
    };
  }
  return { body: { error: ErrorCode.InternalServerError, message: 'Internal server error' }, headers: {}, cause };
}

/**
 * Every failure, whatever raised it (our code, Nest's router, passport, the body reader, the
 * store), leaves as HTTP 400 with the contract's `{error, message}` body.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Failure');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const failure = describeFailure(exception);

    if (failure.cause !== undefined) {
      const requestId = response.getHeader('X-Request-Id');
      this.logger.error(
        `${failure.body.error} for ${request.method} ${request.path} (request ${String(requestId)})`,
        failure.cause instanceof Error ? failure.cause.stack : inspect(failure.cause),
      );
    }
    response.locals[ERROR_CODE_LOCAL] = failure.body.error;
    if (response.headersSent) {
      request.socket.destroy();
      return;
    }
    response.status(400).set(failure.headers).json(failure.body);
  }
}
