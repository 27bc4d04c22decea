import type { NextFunction, Request, Response } from 'express';
import { type ErrorBody, ErrorCode } from './error-codes';
import { ERROR_CODE_LOCAL } from './logging';

/**
 * Once shutdown begins, the listener stops accepting, but a keep-alive connection may still
 * bring a new request. It is refused (code 503, `Connection: close`) so the client retries
 * elsewhere, while requests already in flight run to their end.
 */
export class Draining {
  private draining = false;

  start(): void {
    this.draining = true;
  }

  get active(): boolean {
    return this.draining;
  }

  readonly middleware = (_request: Request, response: Response, next: NextFunction): void => {
    if (!this.draining) {
      next();
      return;
    }
    const body: ErrorBody = { error: ErrorCode.ServiceUnavailable, message: 'The server is shutting down; try again' };
    response.locals[ERROR_CODE_LOCAL] = body.error;
    response.status(400).set({ Connection: 'close', 'Retry-After': '1' }).json(body);
  };
}
