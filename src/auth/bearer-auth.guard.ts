import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import type { AuthenticatedClient } from './bearer.strategy';
import { IS_PUBLIC_KEY } from './public.decorator';

export const REALM = 'plant-store';

/** Deny by default: every route needs a valid bearer token unless marked `@Public()`. */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC_KEY, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic === true) return true;
    return super.canActivate(context) as Promise<boolean>;
  }

  override handleRequest<TUser = AuthenticatedClient>(
    err: unknown,
    user: TUser | false,
    _info: unknown,
    context: ExecutionContext,
  ): TUser {
    // The store failed while checking the token: not the client's fault, so not a 401.
    if (err instanceof Error) throw err;
    if (err !== null && err !== undefined) throw new Error('token check failed', { cause: err });
    if (user !== false && user !== null && user !== undefined) return user;

    const header = context.switchToHttp().getRequest<Request>().headers.authorization?.trim() ?? '';
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
    throw new ApiError(ErrorCode.Unauthorized, message, { 'WWW-Authenticate': challenge });
  }
}
