import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AuthModule } from './auth/auth.module';
import { BearerAuthGuard } from './auth/bearer-auth';
import { APP_CONFIG, type AppConfig, configModule } from './config/configuration';
import { DatabaseModule } from './database/database.module';
import { ENTITIES } from './entities';
import { AllExceptionsFilter } from './http/all-exceptions.filter';
import { HealthModule } from './health/health.module';
import { ErrorResponses } from './http/error-response';
import { ClientLimits } from './http/http-server';
import { JsonBodyGuard, StrictValidationPipe } from './http/json-body';

import { OpenRequests } from './http/open-requests';
import { RequestGate } from './http/request-gate';
import { createRootLogger, ROOT_LOGGER } from './observability/logger';
import { MetricsModule } from './observability/metrics.module';
import { PlantsModule } from './plants/plants.module';
import { RateLimitModule, rateLimitGuard } from './rate-limit/rate-limit.module';

/** The whole service, built by DI from the configuration; every global registered here, as tests get it. */
@Global() // the logger, the open requests and their answers: one each per application, for every feature
@Module({
  imports: [
    configModule,
    MetricsModule,
    DatabaseModule.forRoot({ client: 'server', entities: ENTITIES }),
    AuthModule,
    RateLimitModule,
    PlantsModule,
    HealthModule,
  ],
  providers: [
    {
      provide: ROOT_LOGGER,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => createRootLogger(config.logLevel, undefined, config.logFormat),
    },
    ClientLimits,
    OpenRequests,
    ErrorResponses,
    RequestGate,
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
    // Deny by default. Global guards run in the order they are given: whose token it is, then
    // RATE_LIMIT's count of it, and only then is its body read; the pipe validates it.
    { provide: APP_GUARD, useClass: BearerAuthGuard },
    rateLimitGuard,
    { provide: APP_GUARD, useClass: JsonBodyGuard },
    { provide: APP_PIPE, useClass: StrictValidationPipe },
  ],
  exports: [ROOT_LOGGER, OpenRequests, ErrorResponses],
})
export class AppModule {}
