import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import type { ValidationError } from 'class-validator';
import type { DataSource } from 'typeorm';
import { AuthModule } from './auth/auth.module';
import { RateLimitModule } from './auth/rate-limit.module';
import type { AppConfig } from './config/configuration';
import { DatabaseModule } from './database/database.module';
import type { ServerLock } from './database/store-kind';
import { AllExceptionsFilter } from './errors/all-exceptions.filter';
import { ApiError } from './errors/api-error';
import { ErrorCode } from './errors/error-codes';
import { HealthModule } from './health/health.module';
import { ShutdownState } from './health/shutdown-state';
import { Connections } from './http/connections';
import { Metrics } from './metrics/metrics';
import { SyncValidationPipe } from './http/sync-validation.pipe';
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

/** What the application shares with the rest of its process (the HTTP server, the metrics listener). */
export interface ProcessParts {
  metrics: Metrics;
  connections: Connections;
  shutdown: ShutdownState;
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
    const rateLimit = config.rateLimit === undefined ? [] : [RateLimitModule.forRoot(config.rateLimit)];
    return {
      module: AppModule,
      // This process's metrics, connections and shutdown state, made once by `createApp`, for every feature.
      global: true,
      exports: [Metrics, Connections, ShutdownState],
      imports: [DatabaseModule.forRoot(dataSource, serverLock), AuthModule, ...rateLimit, PlantsModule, HealthModule],
      providers: [
        { provide: Metrics, useValue: parts.metrics },
        { provide: Connections, useValue: parts.connections },
        { provide: ShutdownState, useValue: parts.shutdown },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        {
          provide: APP_PIPE,
          useValue: new SyncValidationPipe({
            transform: true,
            validateCustomDecorators: true, // the body comes from @JsonBody
            whitelist: true, // unknown properties are ignored: not stored, not echoed
            forbidNonWhitelisted: false,
            forbidUnknownValues: true,
            transformOptions: { enableImplicitConversion: false }, // no coercion: "5" is not an id
            validationError: { target: true, value: false }, // target: the class, for the message
            stopAtFirstError: true,
            exceptionFactory: validationExceptionFactory,
          }),
        },
      ],
    };
  }
}
