import { ValidationPipe } from '@nestjs/common';
import { validateSync, type ValidationError, type ValidatorOptions } from 'class-validator';

/**
 * Nest's ValidationPipe, validating synchronously: none of our constraints is async, and
 * class-validator's async `validate` costs a promise per constraint on every request.
 */
export class SyncValidationPipe extends ValidationPipe {
  protected override validate(object: object, validatorOptions?: ValidatorOptions): ValidationError[] {
    return validateSync(object, validatorOptions);
  }
}
