import { applyDecorators, SetMetadata } from '@nestjs/common';
import { SkipThrottle } from '@nestjs/throttler';

export const IS_PUBLIC_KEY = 'plant-store:isPublic';

/**
 * Marks a route that needs no token. Everything else is denied without one. A public route is
 * not rate-limited either: RATE_LIMIT counts per token.
 */
export const Public = (): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(IS_PUBLIC_KEY, true), SkipThrottle());
