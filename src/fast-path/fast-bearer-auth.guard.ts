import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import passport from 'passport';
import { IS_PUBLIC_KEY } from '../auth/public.decorator';
import { asError, unauthorized } from '../auth/unauthorized';

type Middleware = (request: Request, response: Response, next: (error?: unknown) => void) => void;

/** What passport passes on when every strategy failed (`failWithError`): the client's fault. */
function isAuthenticationFailure(error: unknown): boolean {
  return error instanceof Error && error.name === 'AuthenticationError';
}

/**
 * Stands for `BearerAuthGuard` (@nestjs/passport's AuthGuard('bearer')), with the same answers:
 * passport's `authenticate` middleware is made once, where AuthGuard makes one for every request
 * with its options merged anew and its callbacks wrapped in more closures; and whether a handler
 * is public is read once. On success passport puts the client on `request.user`
 * (`assignProperty`); a missing or wrong token comes back as an AuthenticationError
 * (`failWithError`), answered with the same 401.
 */
@Injectable()
export class FastBearerAuthGuard implements CanActivate {
  private readonly authenticate = passport.authenticate('bearer', {
    session: false,
    assignProperty: 'user',
    authInfo: false,
    failWithError: true,
  }) as Middleware;

  private readonly publicHandlers = new WeakMap<object, boolean>();

  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (this.isPublic(context)) return true;
    // By position: `switchToHttp()` makes an object and three closures.
    const request = context.getArgByIndex<Request>(0);
    return new Promise((resolve, reject) => {
      this.authenticate(request, context.getArgByIndex<Response>(1), (error) => {
        if (error === undefined || error === null) resolve(true);
        else if (isAuthenticationFailure(error)) reject(unauthorized(request));
        else reject(asError(error));
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
