import { type CanActivate, type ExecutionContext, Inject, Injectable, Optional } from '@nestjs/common';

/** The limiter for RATE_LIMIT, when it is set: provided by RateLimitModule. */
export const RATE_LIMITER = Symbol('RateLimiter');

/**
 * Applies RATE_LIMIT to a route, after the bearer guard. Without RATE_LIMIT there is no limiter
 * and nothing to do: @nestjs/throttler is then not even loaded (see AppModule.forRoot).
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(@Optional() @Inject(RATE_LIMITER) private readonly limiter?: CanActivate) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    return this.limiter === undefined ? true : (this.limiter.canActivate(context) as boolean | Promise<boolean>);
  }
}
