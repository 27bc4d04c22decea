import { type ArgumentMetadata, Injectable, type Type, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage, type ValidationError, type ValidatorOptions, validateSync } from 'class-validator';
import { ApiError, invalidBody } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { ParseInt64Pipe } from './parse-int64.pipe';

/** A member the class declares as one of these is never an object: one sent is handed on as `{}`, unwalked. */
const PRIMITIVES: readonly unknown[] = [String, Number, Boolean, BigInt];

/** A number parameter as JSON writes one. */
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * Nest's ValidationPipe, read strictly: a body is its class's declared members only (unknown ones
 * dropped before class-transformer would walk them), nothing is coerced, and a path or query
 * parameter declared `number` or `bigint` is that, exactly, or 400: never NaN, never rounded.
 */
@Injectable()
export class StrictValidationPipe extends ValidationPipe {
  private readonly declared = new Map<Type, readonly string[]>();
  private readonly int64 = new ParseInt64Pipe();

  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidUnknownValues: true,
      transformOptions: { enableImplicitConversion: false }, // "5" is not an id
      validationError: { target: true, value: false },
      stopAtFirstError: true,
      exceptionFactory: invalidBody,
    });
  }

  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { type, metatype } = metadata;
    const body = type === 'body' && metatype !== undefined && this.toValidate(metadata);
    return super.transform(body ? this.declaredMembers(value, metatype) : value, metadata);
  }

  /** A bigint is a primitive too, read by `transformPrimitive`. */
  protected override toValidate(metadata: ArgumentMetadata): boolean {
    return !isBigInt(metadata.metatype) && super.toValidate(metadata);
  }

  protected override transformPrimitive(value: unknown, metadata: ArgumentMetadata): unknown {
    const { type, metatype, data } = metadata;
    if ((type !== 'param' && type !== 'query') || data === undefined || typeof value !== 'string') {
      return super.transformPrimitive(value, metadata);
    }
    if (isBigInt(metatype)) return this.int64.transform(value, metadata);
    if (metatype === Number) {
      const number = Number(value);
      if (!NUMBER.test(value) || !Number.isFinite(number)) throw refused(`${data} must be a number`);
      if (Number.isInteger(number) && !Number.isSafeInteger(number)) {
        throw refused(`${data} is past 2^53, where a number is not exact: declare it bigint (ParseInt64Pipe)`);
      }
      return number;
    }
    if (metatype === Boolean && value !== 'true' && value !== 'false') throw refused(`${data} must be true or false`);
    return super.transformPrimitive(value, metadata);
  }

  /** No rule here is asynchronous: validating at once saves the turns of the event loop a promise costs. */
  protected override validate(object: object, options?: ValidatorOptions): ValidationError[] {
    return validateSync(object, options);
  }

  private declaredMembers(value: unknown, type: Type): Record<string, unknown> {
    if (value === undefined) throw refused(`Request body is required: a JSON ${type.name} object`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw refused(`Request body must be a JSON object (${type.name})`);
    }
    const sent = value as Record<string, unknown>;
    const members: Record<string, unknown> = {};
    for (const name of this.declaredBy(type)) {
      const member = Object.hasOwn(sent, name) ? sent[name] : undefined;
      const primitive = PRIMITIVES.includes(Reflect.getMetadata('design:type', type.prototype as object, name));
      members[name] = typeof member === 'object' && member !== null && primitive ? {} : member;
    }
    return members;
  }

  private declaredBy(type: Type): readonly string[] {
    let names = this.declared.get(type);
    if (names === undefined) {
      const rules = getMetadataStorage().getTargetValidationMetadatas(type, '', true, false);
      this.declared.set(type, (names = [...new Set(rules.map((rule) => rule.propertyName))]));
    }
    return names;
  }
}

const isBigInt = (type: unknown): boolean => type === BigInt;

const refused = (message: string): ApiError => new ApiError(ErrorCode.BadRequest, message);
