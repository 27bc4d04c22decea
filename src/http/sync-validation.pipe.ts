import { type ArgumentMetadata, type Type, ValidationPipe } from '@nestjs/common';
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

/**
 * Nest's ValidationPipe, validating synchronously: none of our constraints is async, and
 * class-validator's async `validate` costs a promise per constraint on every request.
 *
 * A body read by `@JsonBody` (a custom parameter) is a plain object parsed from JSON, holding
 * only the DTO's fields. For it, most of what Nest's `transform` does for any value at all has
 * nothing to do (a nil or primitive value, the gaps of sparse arrays, binary values, waiting for
 * the validator packages to load), and it took a third of the pipe's time on every create (see
 * docs/performance.md). So for such a body the same steps that matter run, in the same order
 * and with the same options: prototype keys stripped, class-transformer's instance,
 * class-validator's verdict, the exception factory's 400. Anything else takes Nest's way. And
 * class-validator keeps the rules it finds for a class (see cacheValidationRules), an object
 * that passes every rule is told so without the executor's error records (see passesEveryRule),
 * and class-transformer's instance of a class it would only copy into is made without its
 * executor (see toInstance).
 */
export class SyncValidationPipe extends ValidationPipe {
  constructor(...options: ConstructorParameters<typeof ValidationPipe>) {
    super(...options);
    cacheValidationRules();
  }

  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'custom' || !this.isTransformEnabled || !isPlainObject(value) || !this.toValidate(metadata)) {
      return super.transform(value, metadata) as Promise<unknown>;
    }
    if (mayHoldProtoKeys(value)) this.stripProtoKeys(value);
    const entity = toInstance(metadata.metatype as Type<object>, value, this.transformOptions);
    const errors = this.validate(entity, this.validatorOptions);
    if (errors.length > 0) return Promise.reject(this.exceptionFactory(errors) as Error);
    return Promise.resolve(entity);
  }

  protected override validate(object: object, validatorOptions?: ValidatorOptions): ValidationError[] {
    return passesEveryRule(object, validatorOptions) === true ? [] : validateSync(object, validatorOptions);
  }
}
