import { type DynamicModule, Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { AuthModule } from './auth/auth.module';
import { BearerAuthGuard } from './auth/bearer-auth';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { type AppConfig, configModule } from './config/configuration';
import { DatabaseModule } from './database/database.module';
import type { ServerLock } from './database/store-kind';
import { AllExceptionsFilter } from './errors/all-exceptions.filter';
import { HealthModule } from './health/health.module';
import { RequestGate } from './http/request-gate';
import { JsonBodyPipe, VALIDATION_OPTIONS } from './plants/json-body';
import { ROOT_LOGGER } from './observability/logger';
import { Metrics } from './observability/metrics';
import { PlantsModule } from './plants/plants.module';

/** The application from a checked configuration, the logger and an open store; every global registered here, as tests get it. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logger: Logger, dataSource: DataSource, serverLock: ServerLock): DynamicModule {
    const rateLimit = config.rateLimit === undefined ? [] : [RateLimitModule.forRoot(config.rateLimit)];
    return {
      module: AppModule,
      // The logger, the metrics and the gate: one each per process, for every feature.
      global: true,
      exports: [ROOT_LOGGER, Metrics, RequestGate],
      imports: [
        configModule(config),
        DatabaseModule.forRoot(dataSource, serverLock),
        AuthModule,
        ...rateLimit,
        PlantsModule,
        HealthModule,
      ],
      providers: [
        { provide: ROOT_LOGGER, useValue: logger },
        { provide: Metrics, useValue: new Metrics(config.metrics !== undefined) },
        RequestGate,
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        // Deny by default. Global guards run in the order they are provided, and this module's
        // come first: the bearer guard has said whose token it is before RATE_LIMIT's counts it.
        { provide: APP_GUARD, useClass: BearerAuthGuard },
        // Global pipes run in the order they are provided: the body is read, then validated.
        { provide: APP_PIPE, useClass: JsonBodyPipe },
        { provide: APP_PIPE, useValue: new ValidationPipe(VALIDATION_OPTIONS) },
      ],
    };
  }
}
