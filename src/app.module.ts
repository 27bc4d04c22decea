import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import type { ValidationError } from 'class-validator';
import type { DataSource } from 'typeorm';
import { AuthModule } from './auth/auth.module';
import { AppConfigModule } from './config/app-config.module';
import type { AppConfig } from './config/configuration';
import { DatabaseModule } from './database/database.module';
import { AllExceptionsFilter } from './errors/all-exceptions.filter';
import { ApiError } from './errors/api-error';
import { ErrorCode } from './errors/error-codes';
import { HealthModule } from './health/health.module';
import { SyncValidationPipe } from './http/sync-validation.pipe';
import { PlantsModule } from './plants/plants.module';

/** One message per bad field (the pipe stops at a field's first failed rule). */
function flattenMessages(errors: ValidationError[]): string[] {
  return errors.flatMap((error) => [
    ...Object.values(error.constraints ?? {}),
    ...flattenMessages(error.children ?? []),
  ]);
}

/** One 400 naming every bad field, e.g. "Invalid NewPlant: id is required; name must be a string". */
export function validationExceptionFactory(errors: ValidationError[]): ApiError {
  return new ApiError(ErrorCode.BadRequest, `Invalid NewPlant: ${flattenMessages(errors).join('; ')}`);
}

const MINUTE_MS = 60_000;

/**
 * The application, built from a validated configuration and an open store, which the caller
 * (`createApp`, for the server and the tests alike) has made once. Everything global is
 * registered here, so a test that compiles this module gets exactly what production gets.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, dataSource: DataSource): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        DatabaseModule.forRoot(dataSource),
        ThrottlerModule.forRoot({
          throttlers: [{ ttl: MINUTE_MS, limit: config.rateLimit ?? Number.MAX_SAFE_INTEGER }],
          skipIf: () => config.rateLimit === undefined,
        }),
        AuthModule,
        PlantsModule,
        HealthModule,
      ],
      providers: [
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        {
          provide: APP_PIPE,
          useValue: new SyncValidationPipe({
            transform: true,
            whitelist: true, // unknown properties are ignored: not stored, not echoed
            forbidNonWhitelisted: false,
            forbidUnknownValues: true,
            transformOptions: { enableImplicitConversion: false }, // no coercion: "5" is not an id
            validationError: { target: false, value: false },
            stopAtFirstError: true,
            exceptionFactory: validationExceptionFactory,
          }),
        },
      ],
    };
  }
}
