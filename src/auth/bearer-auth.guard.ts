import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import passport from 'passport';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { IS_PUBLIC_KEY } from './public.decorator';

export const REALM = 'plant-store';

type Middleware = (request: Request, response: Response, next: (error?: unknown) => void) => void;

/** What passport passes on when every strategy failed (`failWithError`): the client's fault. */
function isAuthenticationFailure(error: unknown): boolean {
  return error instanceof Error && error.name === 'AuthenticationError';
}

/** The 401 for a request that passport turned away, saying what was wrong with what it sent. */
function unauthorized(request: Request): ApiError {
  const header = request.headers.authorization?.trim() ?? '';
  const sentBearer = /^bearer\s+\S/i.test(header);
  let message: string;
  if (header === '') {
    message = 'Missing credentials: send Authorization: Bearer <token>';
  } else if (/^bearer$/i.test(header)) {
    message = 'Missing token: the Authorization header says Bearer but carries no token';
  } else if (!sentBearer) {
    message = 'Unsupported authorization scheme: use Authorization: Bearer <token>';
  } else {
    message = 'Invalid or revoked token';
  }
  const challenge = sentBearer ? `Bearer realm="${REALM}", error="invalid_token"` : `Bearer realm="${REALM}"`;
  return new ApiError(ErrorCode.Unauthorized, message, { 'WWW-Authenticate': challenge });
}

/**
 * Deny by default: every route needs a valid bearer token (the `bearer` passport strategy,
 * BearerStrategy) unless marked `@Public()`.
 *
 * passport's `authenticate` middleware is made once, here. @nestjs/passport's AuthGuard makes a
 * new one for every request, with its options merged anew and its callbacks wrapped in more
 * closures: the largest share of what the guard cost a request (see docs/performance.md). On
 * success passport puts the client on `request.user` (`assignProperty`); when the token is
 * missing or wrong it hands over an AuthenticationError (`failWithError`), answered here with
 * the contract's 401; a store that fails while the token is checked is not the client's fault,
 * so its error goes on to the exception filter as it is (503).
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  private readonly authenticate = passport.authenticate('bearer', {
    session: false,
    assignProperty: 'user',
    authInfo: false,
    failWithError: true,
  }) as Middleware;

  /** Whether each handler is public, read from its metadata once rather than on every request. */
  private readonly publicHandlers = new WeakMap<object, boolean>();

  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (this.isPublic(context)) return true;
    // The request and response by position: `switchToHttp()` makes an object and three closures.
    const request = context.getArgByIndex<Request>(0);
    return new Promise((resolve, reject) => {
      this.authenticate(request, context.getArgByIndex<Response>(1), (error) => {
        if (error === undefined || error === null) resolve(true);
        else if (isAuthenticationFailure(error)) reject(unauthorized(request));
        else reject(error instanceof Error ? error : new Error('token check failed', { cause: error }));
      });
    });
  }

  private isPublic(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    let known = this.publicHandlers.get(handler);
    if (known === undefined) {
      known =
        this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC_KEY, [handler, context.getClass()]) === true;
      this.publicHandlers.set(handler, known);
    }
    return known;
  }
}
