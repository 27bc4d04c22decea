import { type DynamicModule, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { RATE_LIMITER } from './rate-limit.guard';
import { TokenThrottlerGuard } from './token-throttler.guard';

const MINUTE_MS = 60_000;

/** RATE_LIMIT requests per minute per token, by @nestjs/throttler (in this process's memory). */
@Module({})
export class RateLimitModule {
  static forRoot(limit: number): DynamicModule {
    return {
      module: RateLimitModule,
      global: true,
      imports: [ThrottlerModule.forRoot({ throttlers: [{ ttl: MINUTE_MS, limit }] })],
      providers: [TokenThrottlerGuard, { provide: RATE_LIMITER, useExisting: TokenThrottlerGuard }],
      exports: [RATE_LIMITER],
    };
  }
}
