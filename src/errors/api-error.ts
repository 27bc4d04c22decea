import { HttpException } from '@nestjs/common';
import { type ErrorCode } from './error-codes';

/**
 * A failure we raise on purpose, with its contract code. The HTTP status is always 400;
 * the code travels in the body. `headers` are set on the answer (Allow, WWW-Authenticate).
 */
export class ApiError extends HttpException {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super({ error: code, message }, code);
    this.name = 'ApiError';
  }
}
