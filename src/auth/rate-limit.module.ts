import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { TokenThrottlerGuard } from './token-throttler.guard';

const MINUTE_MS = 60_000;

/**
 * RATE_LIMIT requests per minute per token, by @nestjs/throttler (in this process's memory).
 * Imported only when RATE_LIMIT is set, after AuthModule: global guards run in the order their
 * modules are imported, so the bearer guard has said whose token it is before this one counts.
 * Routes marked `@Public()` are never limited.
 */
@Module({})
export class RateLimitModule {
  static forRoot(limit: number): DynamicModule {
    return {
      module: RateLimitModule,
      imports: [ThrottlerModule.forRoot({ throttlers: [{ ttl: MINUTE_MS, limit }] })],
      providers: [{ provide: APP_GUARD, useClass: TokenThrottlerGuard }],
    };
  }
}
