import {
  type ArgumentMetadata,
  createParamDecorator,
  type ExecutionContext,
  Inject,
  Injectable,
  type PipeTransform,
  type Type,
  type ValidationPipeOptions,
} from '@nestjs/common';
import bytes from 'bytes';
import { getMetadataStorage, type ValidationError } from 'class-validator';
import contentType from 'content-type';
import type { Request } from 'express';
import getRawBody from 'raw-body';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';

export type JsonBodyShape = { schema: string; fields: readonly string[] };

const shapes = new WeakMap<Type, JsonBodyShape>();

/** The body a class describes: the properties it has validation rules for, under its name. */
export function jsonBodyShape(type: Type): JsonBodyShape {
  let shape = shapes.get(type);
  if (shape === undefined) {
    const rules = getMetadataStorage().getTargetValidationMetadatas(type, '', true, false);
    shape = { schema: type.name, fields: [...new Set(rules.map((rule) => rule.propertyName))] };
    shapes.set(type, shape);
  }
  return shape;
}

const JSON_BODY = 'json-body';

/** One message naming the schema and every bad field: "Invalid NewPlant: id is required; …". */
function invalid(errors: ValidationError[]): ApiError {
  const messages = (list: ValidationError[]): string[] =>
    list.flatMap((error) => [...Object.values(error.constraints ?? {}), ...messages(error.children ?? [])]);
  const schema = errors[0]?.target?.constructor.name ?? 'body';
  return new ApiError(ErrorCode.BadRequest, `Invalid ${schema}: ${messages(errors).join('; ')}`);
}

/** The ValidationPipe's options, global and `plants import`'s: read strictly, unknown fields dropped. */
export const VALIDATION_OPTIONS: ValidationPipeOptions = {
  transform: true,
  validateCustomDecorators: true, // the body comes from @JsonBody
  whitelist: true,
  forbidUnknownValues: true,
  transformOptions: { enableImplicitConversion: false }, // no coercion: "5" is not an id
  validationError: { target: true, value: false },
  stopAtFirstError: true,
  exceptionFactory: invalid,
};

/** Nest's JSON parser stays off: `JSON.parse` alone rounds ids past 2^53. */
export const JsonBody = (): ParameterDecorator =>
  createParamDecorator((_data: unknown, context: ExecutionContext) => context.getArgByIndex<unknown>(0))(JSON_BODY);

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function checkMediaType(request: Request): void {
  let parsed: contentType.ParsedMediaType | undefined;
  try {
    parsed = contentType.parse(request);
  } catch {
    // absent or unparsable: refused below
  }
  if (parsed?.type !== 'application/json') {
    throw new ApiError(ErrorCode.UnsupportedMediaType, 'Content-Type must be application/json');
  }
  const charset = parsed.parameters.charset?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError(ErrorCode.UnsupportedMediaType, `Charset "${charset}" is not supported; JSON is UTF-8`);
  }
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined) {
    throw new ApiError(
      ErrorCode.UnsupportedMediaType,
      `Content-Encoding "${encoding.slice(0, 64)}" is not supported; send the body as it is, without one`,
    );
  }
}

async function readText(request: Request, limit: number, schema: string): Promise<string> {
  const length = request.headers['content-length'];
  const hasBody = request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (request.headers['content-type'] === undefined && !hasBody) throw badBody(`is required: a JSON ${schema} object`);
  checkMediaType(request);
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
  if (raw.length === 0) throw badBody(`is required: a JSON ${schema} object`);
  try {
    return utf8.decode(raw);
  } catch {
    throw badBody('is not valid UTF-8');
  }
}

const tooLarge = (limit: number): ApiError =>
  new ApiError(
    ErrorCode.PayloadTooLarge,
    `Request body is larger than ${bytes.format(limit)} (the server's BODY_LIMIT)`,
  );
const badBody = (message: string): ApiError => new ApiError(ErrorCode.BadRequest, `Request body ${message}`);

/** Runs after the guards, so an unauthenticated client costs no reading. */
@Injectable()
export class JsonBodyPipe implements PipeTransform {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async transform(value: unknown, { type, data, metatype }: ArgumentMetadata): Promise<unknown> {
    if (type !== 'custom' || data !== JSON_BODY || metatype === undefined) return value;
    const { schema, fields } = jsonBodyShape(metatype);
    const text = await readText(value as Request, this.config.bodyLimit, schema);
    let fieldsRead: Record<string, unknown> | undefined;
    try {
      fieldsRead = readJsonFields(text, fields);
    } catch (error) {
      throw badBody(`is not valid JSON${error instanceof SyntaxError ? `: ${error.message}` : ''}`);
    }
    if (fieldsRead === undefined) throw badBody(`must be a JSON object (${schema})`);
    return fieldsRead;
  }
}

const ZERO = 0x30;

/** Integers (`5`, `-0`, `5.0`, `5e2`) exactly as a bigint; the exponent is bounded before any arithmetic. */
export function parseJsonNumber(text: string): bigint | number {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return Number(text);
  const [, sign, whole, fraction = '', exponentText = '0'] = match;
  const all = whole + fraction;
  let start = 0;
  while (start < all.length && all.charCodeAt(start) === ZERO) start++;
  let end = all.length;
  while (end > start && all.charCodeAt(end - 1) === ZERO) end--;
  if (start === end) return 0n;
  const exponent = Number(exponentText) - fraction.length + (all.length - end);
  // Not an integer, or past int64's 19 digits whatever the sign.
  if (exponent < 0 || end - start + exponent > 20) return Number(text);
  const magnitude = BigInt(all.slice(start, end)) * 10n ** BigInt(exponent);
  return sign === '-' ? -magnitude : magnitude;
}

/** 17 or more digits may round (`1.0000000000000001`); so may a number past 2^53, and a 0 (`1e-400`). */
const MAY_ROUND = /\d[\d.]{16}/;

/**
 * Where a number may have been rounded, its source text is read instead.
 * A nested value is passed on as `{}`: it fails all the same, and validation never walks it.
 */
export function readJsonFields(text: string, fields: readonly string[]): Record<string, unknown> | undefined {
  const body = JSON.parse(text) as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const values = body as Record<string, unknown>;
  const needsSource = fields.some((field) => {
    const value = values[field];
    if (typeof value !== 'number' || !Number.isInteger(value)) return false;
    return !Number.isSafeInteger(value) || value === 0 || MAY_ROUND.test(text);
  });
  const sources = needsSource ? sourcesOf(text, fields) : undefined;
  const taken: Record<string, unknown> = {};
  for (const field of fields) {
    const value = Object.hasOwn(values, field) ? values[field] : undefined;
    if (typeof value === 'number') {
      const source = sources?.[field];
      taken[field] =
        source !== undefined ? parseJsonNumber(source) : Number.isSafeInteger(value) ? BigInt(value) : value;
    } else {
      taken[field] = typeof value === 'object' && value !== null ? {} : value;
    }
  }
  return taken;
}

/**
 * The source text of `fields`' values in the object `text` (valid JSON), the last of a repeated key as
 * `JSON.parse` takes it; a scan of the top level, as a reviver walks every value and overflows on a deep one.
 */
function sourcesOf(text: string, fields: readonly string[]): Record<string, string | undefined> {
  const sources: Record<string, string | undefined> = {};
  let [depth, key, start] = [0, '', -1];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const open = i;
      while (text[++i] !== '"') if (text[i] === '\\') i++;
      if (depth === 1 && start === -1) key = JSON.parse(text.slice(open, i + 1)) as string;
    } else if (c === ':' && depth === 1) start = i + 1;
    else if (c === '{' || c === '[') depth++;
    else if (c === ',' || c === '}' || c === ']') {
      if (depth === 1 && start !== -1 && fields.includes(key)) sources[key] = text.slice(start, i).trim();
      if (depth === 1) start = -1;
      if (c !== ',') depth--;
    }
  }
  return sources;
}
