import { applyDecorators, SetMetadata } from '@nestjs/common';
import { SkipThrottle } from '@nestjs/throttler';

export const IS_PUBLIC_KEY = 'plant-store:isPublic';

/** A route that needs no token, and so is not rate-limited either (RATE_LIMIT counts per token). */
export const Public = (): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(IS_PUBLIC_KEY, true), SkipThrottle());
