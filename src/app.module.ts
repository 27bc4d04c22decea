import cluster from 'node:cluster';
import { type DynamicModule, Module, type ValidationPipeOptions } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE, Reflector } from '@nestjs/core';
import type { ValidationError } from 'class-validator';
import type { DataSource } from 'typeorm';
import { AuthModule } from './auth/auth.module';
import { RateLimitModule, type RateLimitCounts } from './auth/rate-limit.module';
import { AppConfig } from './config/configuration';
import { DatabaseModule } from './database/database.module';
import type { ServerLock } from './database/store-kind';
import { AllExceptionsFilter } from './errors/all-exceptions.filter';
import { ApiError } from './errors/api-error';
import { ErrorCode } from './errors/error-codes';
import { HealthModule } from './health/health.module';
import { ShutdownState } from './health/shutdown-state';
import { FastPath } from './fast-path/fast-path';
import { ConnectionBudget } from './http/connection-budget';
import { Drain } from './http/drain';
import { JsonBodyPipe } from './http/json-body.pipe';
import { Metrics } from './metrics/metrics';
import { PlantsModule } from './plants/plants.module';

/** One message per bad field (the pipe stops at a field's first failed rule). */
function flattenMessages(errors: ValidationError[]): string[] {
  return errors.flatMap((error) => [
    ...Object.values(error.constraints ?? {}),
    ...flattenMessages(error.children ?? []),
  ]);
}

/**
 * One 400 naming the schema and every bad field, e.g. "Invalid NewPlant: id is required; name
 * must be a string". The schema is the validated class (each error's `target`).
 */
export function validationExceptionFactory(errors: ValidationError[]): ApiError {
  const schema = errors[0]?.target?.constructor.name ?? 'body';
  return new ApiError(ErrorCode.BadRequest, `Invalid ${schema}: ${flattenMessages(errors).join('; ')}`);
}

/** The global validation pipe's options, whichever pipe (FastPath) takes them. */
export const VALIDATION_OPTIONS: ValidationPipeOptions = {
  transform: true,
  validateCustomDecorators: true, // the body comes from @JsonBody
  whitelist: true, // unknown properties are ignored: not stored, not echoed
  forbidNonWhitelisted: false,
  forbidUnknownValues: true,
  transformOptions: { enableImplicitConversion: false }, // no coercion: "5" is not an id
  validationError: { target: true, value: false }, // target: the class, for the message
  stopAtFirstError: true,
  exceptionFactory: validationExceptionFactory,
};

/** What the application shares with the rest of its process (the HTTP server, the metrics listener). */
export interface ProcessParts {
  metrics: Metrics;
  drain: Drain;
  connections: ConnectionBudget;
  shutdown: ShutdownState;
  fastPath: FastPath;
}

/** Where RATE_LIMIT counts: one count per instance (its primary's, under WORKERS) unless Redis keeps the fleet's. */
function counts(config: AppConfig): RateLimitCounts {
  if (config.rateLimitRedisUrl !== undefined) return { redisUrl: config.rateLimitRedisUrl };
  return cluster.isWorker ? 'cluster' : 'process';
}

/**
 * The application, built from a validated configuration and an open store, which the caller
 * (`createApp`, for the server and the tests alike) has made once. Everything global is
 * registered here, so a test that compiles this module gets exactly what production gets.
 */
@Module({})
export class AppModule {
  static forRoot(
    config: AppConfig,
    dataSource: DataSource,
    serverLock: ServerLock,
    parts: ProcessParts,
  ): DynamicModule {
    const rateLimit = config.rateLimit === undefined ? [] : [RateLimitModule.forRoot(config.rateLimit, counts(config))];
    return {
      module: AppModule,
      // This process's metrics, drain, connection budget, shutdown state and fast path, made once by `createApp`, for every feature.
      global: true,
      exports: [AppConfig, Metrics, Drain, ConnectionBudget, ShutdownState, FastPath],
      imports: [DatabaseModule.forRoot(dataSource, serverLock), AuthModule, ...rateLimit, PlantsModule, HealthModule],
      providers: [
        { provide: AppConfig, useValue: config },
        { provide: Metrics, useValue: parts.metrics },
        { provide: Drain, useValue: parts.drain },
        { provide: ConnectionBudget, useValue: parts.connections },
        { provide: ShutdownState, useValue: parts.shutdown },
        { provide: FastPath, useValue: parts.fastPath },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        // Deny by default: BearerAuthGuard, or its stand-in from the fast-path cage. Global guards
        // run in the order they are provided, and this module's come first: the bearer guard has
        // said whose token it is before RATE_LIMIT's guard counts it.
        {
          provide: APP_GUARD,
          inject: [Reflector],
          useFactory: (reflector: Reflector) => parts.fastPath.bearerGuard(reflector),
        },
        // Global pipes run in the order they are provided: the body is read, then validated.
        { provide: APP_PIPE, useClass: JsonBodyPipe },
        {
          provide: APP_PIPE,
          // Nest's ValidationPipe, or its stand-in from the fast-path cage.
          useValue: parts.fastPath.validationPipe(VALIDATION_OPTIONS),
        },
      ],
    };
  }
}
