import cluster from 'node:cluster';
import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE, Reflector } from '@nestjs/core';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { AuthModule } from './auth/auth.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { type AppConfig, configModule } from './config/configuration';
import { DatabaseModule } from './database/database.module';
import type { ServerLock } from './database/store-kind';
import { AllExceptionsFilter } from './errors/all-exceptions.filter';
import { EdgeModule } from './edge/edge.module';
import { FastPath } from './fast-path/fast-path';
import { HealthModule } from './health/health.module';
import { ShutdownState } from './health/shutdown-state';
import { JsonBodyPipe } from './plants/json-body';
import { VALIDATION_OPTIONS } from './http/validation';
import { ROOT_LOGGER } from './observability/logger';
import { Metrics } from './observability/metrics';
import { RequestLog } from './observability/logger';
import { PlantsModule } from './plants/plants.module';

/**
 * The application, built from a validated configuration, the process's logger and an open
 * store, which the caller (`createApp`, for the server and the tests alike) has made once.
 * Everything global is registered here, so a test that compiles this module gets exactly what
 * production gets.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logger: Logger, dataSource: DataSource, serverLock: ServerLock): DynamicModule {
    const rateLimit = config.rateLimit === undefined ? [] : [RateLimitModule.forRoot(config.rateLimit)];
    return {
      module: AppModule,
      // The logger, the metrics and the request log, the shutdown state and the fast path: one each per process, for every feature.
      global: true,
      exports: [ROOT_LOGGER, Metrics, RequestLog, ShutdownState, FastPath],
      imports: [
        configModule(config),
        DatabaseModule.forRoot(dataSource, serverLock),
        EdgeModule,
        AuthModule,
        ...rateLimit,
        PlantsModule,
        HealthModule,
      ],
      providers: [
        { provide: ROOT_LOGGER, useValue: logger },
        {
          provide: Metrics,
          useFactory: () => (config.metrics === undefined ? Metrics.off() : Metrics.on(cluster.worker?.id)),
        },
        RequestLog,
        ShutdownState,
        { provide: FastPath, useFactory: () => FastPath.decide(config.fastPath, logger) },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        // Deny by default: BearerAuthGuard, or its stand-in from the fast-path cage. Global guards
        // run in the order they are provided, and this module's come first: the bearer guard has
        // said whose token it is before RATE_LIMIT's guard counts it.
        {
          provide: APP_GUARD,
          inject: [Reflector, FastPath],
          useFactory: (reflector: Reflector, fastPath: FastPath) => fastPath.bearerGuard(reflector),
        },
        // Global pipes run in the order they are provided: the body is read, then validated.
        { provide: APP_PIPE, useClass: JsonBodyPipe },
        {
          provide: APP_PIPE,
          // Nest's ValidationPipe, or its stand-in from the fast-path cage.
          inject: [FastPath],
          useFactory: (fastPath: FastPath) => fastPath.validationPipe(VALIDATION_OPTIONS),
        },
      ],
    };
  }
}
