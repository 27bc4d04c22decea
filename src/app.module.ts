import { Module } from '@nestjs/common';
import { ConfigModule, type ConfigType } from '@nestjs/config';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { ValidationError } from 'class-validator';
import { AuthModule } from './auth/auth.module';
import { AllExceptionsFilter } from './common/all-exceptions.filter';
import { ApiError } from './common/api-error';
import { ErrorCode } from './common/error-codes';
import { LoggingModule } from './common/logging';
import { SyncValidationPipe } from './common/sync-validation.pipe';
import { appConfig } from './config/app.config';
import { dataSourceOptions, openDataSource } from './database/data-source-options';
import { HealthModule } from './health/health.module';
import { PlantsModule } from './plants/plants.module';

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

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [appConfig] }),
    LoggingModule,
    TypeOrmModule.forRootAsync({
      inject: [appConfig.KEY],
      useFactory: (config: ConfigType<typeof appConfig>) => dataSourceOptions(config.database),
      dataSourceFactory: (options) => openDataSource(options!),
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
        exceptionFactory: validationExceptionFactory,
      }),
    },
  ],
})
export class AppModule {}
