import { applyDecorators, SetMetadata } from '@nestjs/common';
import { SkipThrottle } from '@nestjs/throttler';

export const IS_PUBLIC_KEY = 'plant-store:isPublic';

/**
 * A route any client may call: it needs no token, is not rate-limited (RATE_LIMIT counts per
 * token), and its request body is never read (an unauthenticated client costs no reading).
 */
export const Public = (): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(IS_PUBLIC_KEY, true), SkipThrottle());
