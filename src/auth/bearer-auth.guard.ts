import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { IS_PUBLIC_KEY } from './public.decorator';
import { asError, unauthorized } from './unauthorized';

/**
 * Deny by default: every route needs a valid bearer token (the `bearer` passport strategy,
 * BearerStrategy) unless marked `@Public()`. A missing or wrong token is the contract's 401,
 * saying what was wrong; a store that fails while the token is checked is not the client's
 * fault, so its error goes on to the exception filter as it is (503).
 *
 * @nestjs/passport's AuthGuard, as its documentation extends it. With FAST_PATH on,
 * `FastBearerAuthGuard` (src/fast-path) stands in for it, held to it by a property test.
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  constructor(private readonly reflector: Reflector) {
    super({ session: false });
  }

  override canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC_KEY, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic === true) return true;
    return super.canActivate(context) as Promise<boolean>;
  }

  override handleRequest<Client>(
    error: unknown,
    client: Client | false,
    _info: unknown,
    context: ExecutionContext,
  ): Client {
    if (error !== null && error !== undefined) throw asError(error);
    if (client === false || client === null || client === undefined) {
      throw unauthorized(context.switchToHttp().getRequest<Request>());
    }
    return client;
  }
}
