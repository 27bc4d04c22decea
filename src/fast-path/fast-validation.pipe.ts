import { type ArgumentMetadata, type Type, ValidationPipe, type ValidationPipeOptions } from '@nestjs/common';
import {
  type ClassConstructor,
  type ClassTransformOptions,
  plainToInstance,
  TransformationType,
} from 'class-transformer';
import type { MetadataStorage } from 'class-transformer/types/MetadataStorage';
import { validateSync, type ValidationError, type ValidatorOptions } from 'class-validator';
import { transformStorage } from './internals';
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

/** What class-transformer would do with each property of a class, when it copies it as it is. */
interface ClassFacts {
  /** Whether the class (and its ancestors) has no `@Expose`, `@Exclude` or strategy. */
  plain: boolean;
  /** Property: true when it is copied as it is, false when class-transformer skips it (a getter without setter). */
  copied: Map<string, boolean | null>;
}

let facts = new WeakMap<object, ClassFacts>();
/** class-transformer's storage, once watched; loaded by path only when a copy is first made. */
let storage: MetadataStorage | undefined;

/**
 * Forgets everything learnt about classes whenever a decorator adds a rule (a class loaded
 * later, or a rule added to an ancestor), as cacheValidationRules does for class-validator.
 */
function watchRules(): MetadataStorage {
  if (storage !== undefined) return storage;
  const found = transformStorage() as MetadataStorage | undefined;
  if (found === undefined) throw new Error('class-transformer/cjs/storage is gone (see FastPath)');
  storage = found;
  const forget = (): void => {
    facts = new WeakMap();
  };
  const addType = storage.addTypeMetadata.bind(storage);
  const addTransform = storage.addTransformMetadata.bind(storage);
  const addExpose = storage.addExposeMetadata.bind(storage);
  const addExclude = storage.addExcludeMetadata.bind(storage);
  storage.addTypeMetadata = (metadata) => (forget(), addType(metadata));
  storage.addTransformMetadata = (metadata) => (forget(), addTransform(metadata));
  storage.addExposeMetadata = (metadata) => (forget(), addExpose(metadata));
  storage.addExcludeMetadata = (metadata) => (forget(), addExclude(metadata));
  return storage;
}

/** class-transformer's defaults, the only options under which a property is copied as it is. */
const PLAIN_OPTIONS: Readonly<Record<string, unknown>> = {
  enableCircularCheck: false,
  enableImplicitConversion: false,
  excludeExtraneousValues: false,
  exposeDefaultValues: false,
  exposeUnsetFields: true,
  ignoreDecorators: false,
};

function plainOptions(options: ClassTransformOptions | undefined): boolean {
  if (options === undefined) return true;
  for (const key in options) {
    const value = (options as Record<string, unknown>)[key];
    if (value !== undefined && (!Object.hasOwn(PLAIN_OPTIONS, key) || PLAIN_OPTIONS[key] !== value)) return false;
  }
  return true;
}

function factsOf(storage: MetadataStorage, target: ClassConstructor<object>): ClassFacts {
  let known = facts.get(target);
  if (known === undefined) {
    known = {
      plain:
        storage.getStrategy(target) === 'none' &&
        storage.getExposedMetadatas(target).length === 0 &&
        storage.getExcludedMetadatas(target).length === 0,
      copied: new Map(),
    };
    facts.set(target, known);
  }
  return known;
}

/** The most properties remembered for one class: the names come from whoever sent the object. */
const MAX_KNOWN_PROPERTIES = 64;

/**
 * Whether the property is copied as it is (true), skipped (false), or has a rule of its own or
 * is one too many to remember (null: class-transformer decides).
 */
function copiedAsItIs(
  storage: MetadataStorage,
  target: ClassConstructor<object>,
  known: ClassFacts,
  key: string,
): boolean | null {
  let copied = known.copied.get(key);
  if (copied === undefined) {
    if (known.copied.size >= MAX_KNOWN_PROPERTIES) return null;
    if (
      storage.findTypeMetadata(target, key) !== undefined ||
      storage.findTransformMetadatas(target, key, TransformationType.PLAIN_TO_CLASS).length > 0
    ) {
      copied = null;
    } else {
      const descriptor = Object.getOwnPropertyDescriptor(target.prototype, key);
      copied = descriptor === undefined || descriptor.set !== undefined;
    }
    known.copied.set(key, copied);
  }
  return copied;
}

/**
 * `plainToInstance(target, plain, options)`, the same instance, made without class-transformer's
 * executor when that is all it would do: a class with no class-transformer decorators, its
 * default options, and a plain object holding no objects. class-transformer then makes an
 * instance and copies each property (`undefined` too; never `__proto__` or `constructor`, nor
 * one the prototype has a getter without setter or the instance a function for). Its executor
 * does that with a copy of the options, a Set, and several look-ups and lists per property on
 * every call (see docs/performance-log.md). Anything else, class-transformer does. Hand-written
 * because class-transformer has no such option.
 */
export function toInstance<T extends object>(
  target: ClassConstructor<T>,
  plain: Record<string, unknown>,
  options?: ClassTransformOptions,
): T {
  const storage = watchRules();
  if (!plainOptions(options) || Object.getPrototypeOf(plain) !== Object.prototype) {
    return plainToInstance(target, plain, options);
  }
  const known = factsOf(storage, target);
  if (!known.plain) return plainToInstance(target, plain, options);
  for (const key in plain) {
    if (!Object.hasOwn(plain, key)) continue;
    const value = plain[key];
    if ((typeof value === 'object' && value !== null) || copiedAsItIs(storage, target, known, key) === null) {
      return plainToInstance(target, plain, options);
    }
  }
  const instance = new target() as Record<string, unknown>;
  for (const key in plain) {
    if (!Object.hasOwn(plain, key)) continue;
    if (key === '__proto__' || key === 'constructor' || known.copied.get(key) === false) continue;
    if (instance[key] instanceof Function) continue;
    instance[key] = plain[key];
  }
  return instance as T;
}
