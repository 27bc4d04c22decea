import {
  type ArgumentMetadata,
  type CanActivate,
  type ExecutionContext,
  Inject,
  Injectable,
  type Type,
  ValidationPipe,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import bytes from 'bytes';
import contentType from 'content-type';
import type { Request } from 'express';
import { getMetadataStorage, type ValidationError, type ValidatorOptions, validateSync } from 'class-validator';
import getRawBody from 'raw-body';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { ApiError, invalidBody } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { MAY_ROUND, parseJson } from './json-numbers';
import { strictParameter } from './parameters';
import { IS_PUBLIC_KEY } from './public.decorator';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const badBody = (message: string): ApiError => new ApiError(ErrorCode.BadRequest, `Request body ${message}`);
const unsupported = (message: string): ApiError => new ApiError(ErrorCode.UnsupportedMediaType, message);
const tooLarge = (limit: number): ApiError =>
  new ApiError(
    ErrorCode.PayloadTooLarge,
    `Request body is larger than ${bytes.format(limit)} (the server's BODY_LIMIT)`,
  );

/** The body's text, once its headers are accepted (JSON, UTF-8, no coding); empty when none was sent. */
async function readText(request: Request, limit: number): Promise<string> {
  let type: contentType.ParsedMediaType | undefined;
  try {
    type = contentType.parse(request);
  } catch {
    // absent or unparsable: refused below
  }
  const { charset = 'utf-8' } = type?.parameters ?? {};
  const coding = request.headers['content-encoding']?.slice(0, 64);
  if (type?.type !== 'application/json') throw unsupported('Content-Type must be application/json');
  if (!/^utf-?8$/i.test(charset))
    throw unsupported(`Charset "${charset.toLowerCase()}" is not supported; JSON is UTF-8`);
  if (coding !== undefined) throw unsupported(`Content-Encoding "${coding}" is not supported; send the body as it is`);
  const length = request.headers['content-length'];
  if (length !== undefined && Number(length) > limit) throw tooLarge(limit);
  // Only now, with the request accepted on its headers, is the client told to send its body.
  if (request.httpVersionMinor === 1 && /^100-continue$/i.test(request.headers.expect ?? '')) {
    request.res?.writeContinue();
  }
  let raw: Buffer;
  try {
    raw = await getRawBody(request, { length, limit });
  } catch (error) {
    if ((error as { type?: unknown } | null)?.type === 'entity.too.large') throw tooLarge(limit);
    throw badBody('was incomplete: it ended before its declared length');
  }
  try {
    return utf8.decode(raw);
  } catch {
    throw badBody('is not valid UTF-8');
  }
}

/** JSON.parse is exact but for a number it may have rounded: only such a body is read number by number. */
export const readJson = (text: string): unknown => (MAY_ROUND.test(text) ? parseJson(text) : JSON.parse(text));

/**
 * The last global guard: a request goes on to its handler with its JSON body read (exact: Nest's
 * parser rounds ids past 2^53), or is refused (415, 413, 400); a `@Public()` route's is never read.
 * Only the guards before it have said who the client is and that it may: `@Body()` then has it.
 */
@Injectable()
export class JsonBodyGuard implements CanActivate {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const { headers } = request;
    const sent = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
    const targets = [context.getHandler(), context.getClass()];
    if ((sent || headers['content-type'] !== undefined) && !this.reflector.getAllAndOverride(IS_PUBLIC_KEY, targets)) {
      const text = await readText(request, this.config.bodyLimit);
      try {
        if (text !== '') request.body = readJson(text);
      } catch (error) {
        throw badBody(`is not valid JSON${error instanceof SyntaxError ? `: ${error.message}` : ''}`);
      }
    }
    return true;
  }
}

/** A member the class declares as one of these is never an object: one sent is handed on as `{}`, unwalked. */
const PRIMITIVES: readonly unknown[] = [String, Number, Boolean, BigInt];

/**
 * Nest's ValidationPipe, strict: a body is its class's declared members only (no unknown one is
 * walked), nothing is coerced, and a parameter declared a number is one exactly (`strictParameter`).
 */
@Injectable()
export class StrictValidationPipe extends ValidationPipe {
  private readonly declared = new Map<Type, readonly string[]>();

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

  protected override toValidate(metadata: ArgumentMetadata): boolean {
    return (metadata.metatype as unknown) !== BigInt && super.toValidate(metadata); // a primitive too
  }

  protected override transformPrimitive(value: unknown, metadata: ArgumentMetadata): unknown {
    const read = typeof value === 'string' ? strictParameter(value, metadata) : value;
    return read === value ? super.transformPrimitive(value, metadata) : read;
  }

  /** No rule here is asynchronous: validating at once saves the turns of the event loop a promise costs. */
  protected override validate(object: object, options?: ValidatorOptions): ValidationError[] {
    return validateSync(object, options);
  }

  private declaredMembers(value: unknown, type: Type): Record<string, unknown> {
    if (value === undefined) throw badBody(`is required: a JSON ${type.name} object`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw badBody(`must be a JSON object (${type.name})`);
    }
    let names = this.declared.get(type);
    if (names === undefined) {
      const rules = getMetadataStorage().getTargetValidationMetadatas(type, '', true, false);
      this.declared.set(type, (names = [...new Set(rules.map((rule) => rule.propertyName))]));
    }
    const members: Record<string, unknown> = {};
    for (const name of names) {
      const member = Object.hasOwn(value, name) ? (value as Record<string, unknown>)[name] : undefined;
      const nested = typeof member === 'object' && member !== null;
      const declared: unknown = nested ? Reflect.getMetadata('design:type', type.prototype as object, name) : undefined;
      members[name] = PRIMITIVES.includes(declared) ? {} : member;
    }
    return members;
  }
}
