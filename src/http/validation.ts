import type { ValidationPipeOptions } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';

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

/** The validation pipe's options: the global pipe's (whichever pipe, see FastPath) and `plants import`'s. */
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
