import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC_KEY = 'plant-store:isPublic';

/** Marks a route that needs no token. Everything else is denied without one. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC_KEY, true);
