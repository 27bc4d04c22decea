import { type ArgumentMetadata, type Type, ValidationPipe, type ValidationPipeOptions } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError, type ValidatorOptions } from 'class-validator';
import { toInstance } from './transform-rules-cache';
import { cacheValidationRules, passesEveryRule } from './validation-rules-cache';

/** A JSON object as `@JsonBody` hands it over: plain, its prototype Object's. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * Whether Nest's stripProtoKeys has anything to do in this object: a key it deletes, or an
 * object below it to walk. A body of text and numbers has neither, and the walk costs a
 * WeakSet and a stack.
 */
function mayHoldProtoKeys(value: Record<string, unknown>): boolean {
  for (const key in value) {
    if (key === '__proto__' || key === 'prototype' || key === 'constructor') return true;
    const field = value[key];
    if (typeof field === 'object' && field !== null) return true;
  }
  return false;
}

/** Which of the pipe's own shortcuts it may take (see FastPath). */
export interface FastValidationPieces {
  rulesCache: boolean;
  copy: boolean;
}

/**
 * Stands for Nest's `ValidationPipe` with the same options, and gives the same answers: for a
 * body read by `@JsonBody` (a plain object parsed from JSON, holding only the DTO's fields) it
 * takes only the steps that can matter, in the same order (prototype keys stripped,
 * class-transformer's instance, class-validator's verdict, the exception factory's 400),
 * synchronously, since no constraint here is async. With the validation rules cache it asks
 * `passesEveryRule` before the executor; with the class-transformer copy it makes the instance
 * with `toInstance`. Anything else takes Nest's way.
 */
export class FastValidationPipe extends ValidationPipe {
  private readonly toInstance: typeof toInstance;

  constructor(
    options: ValidationPipeOptions,
    private readonly pieces: FastValidationPieces,
  ) {
    super(options);
    if (pieces.rulesCache) cacheValidationRules();
    this.toInstance = pieces.copy ? toInstance : plainToInstance;
  }

  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'custom' || !this.isTransformEnabled || !isPlainObject(value) || !this.toValidate(metadata)) {
      return super.transform(value, metadata) as Promise<unknown>;
    }
    if (mayHoldProtoKeys(value)) this.stripProtoKeys(value);
    const entity = this.toInstance(metadata.metatype as Type<object>, value, this.transformOptions);
    const errors = this.validate(entity, this.validatorOptions);
    if (errors.length > 0) return Promise.reject(this.exceptionFactory(errors) as Error);
    return Promise.resolve(entity);
  }

  protected override validate(object: object, validatorOptions?: ValidatorOptions): ValidationError[] {
    if (this.pieces.rulesCache && passesEveryRule(object, validatorOptions) === true) return [];
    return validateSync(object, validatorOptions);
  }
}
