import {
  type ArgumentMetadata,
  createParamDecorator,
  type ExecutionContext,
  Inject,
  Injectable,
  type PipeTransform,
  type Type,
} from '@nestjs/common';
import bytes from 'bytes';
import { getMetadataStorage } from 'class-validator';
import contentType from 'content-type';
import type { Request } from 'express';
import getRawBody from 'raw-body';
import { ApiError } from '../errors/api-error';
import { CONFIG, type ConfigSlice } from '../config/configuration';
import { ErrorCode } from '../errors/error-codes';

/** What `@JsonBody` reads for a class: its schema's name (for messages) and the properties taken. */
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

const JSON_BODY = 'json-body'; // how JsonBodyPipe knows a `@JsonBody` parameter

const request = createParamDecorator((_data: typeof JSON_BODY, context: ExecutionContext) =>
  // By position, as the guard reads it: `switchToHttp()` makes an object and three closures.
  context.getArgByIndex<unknown>(0),
);

/**
 * `@JsonBody()`: the request's JSON object body, only the parameter class's fields taken
 * (JsonBodyPipe). Nest's JSON parser stays off (`bodyParser: false`): `JSON.parse` alone rounds big
 * ids. A parameter, not an interceptor, which would cost every request an rxjs pipeline.
 */
export function JsonBody(): ParameterDecorator {
  return request(JSON_BODY);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The last acceptable Content-Type: a client sends the same one each time, and parsing costs two objects. */
let acceptedMediaType: string | undefined;

function checkMediaType(header: string | undefined): void {
  if (header !== undefined && header === acceptedMediaType) return;
  let parsed: contentType.ParsedMediaType | undefined;
  try {
    parsed = header === undefined ? undefined : contentType.parse(header);
  } catch {
    // unparsable: refused below
  }
  if (parsed?.type !== 'application/json') {
    throw new ApiError(ErrorCode.UnsupportedMediaType, 'Content-Type must be application/json');
  }
  const charset = parsed.parameters.charset?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError(ErrorCode.UnsupportedMediaType, `Charset "${charset}" is not supported; JSON is UTF-8`);
  }
  acceptedMediaType = header;
}

async function readJsonObject(
  request: Request,
  limit: number,
  { schema, fields }: JsonBodyShape,
): Promise<Record<string, unknown>> {
  const declaredLength = request.headers['content-length'];
  const hasBody =
    request.headers['transfer-encoding'] !== undefined || (declaredLength !== undefined && declaredLength !== '0');
  const type = request.headers['content-type'];
  if (type === undefined && !hasBody) {
    throw new ApiError(ErrorCode.BadRequest, `Request body is required: a JSON ${schema} object`);
  }
  checkMediaType(type);
  const encoding = (request.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') {
    throw new ApiError(
      ErrorCode.UnsupportedMediaType,
      `Content-Encoding "${encoding}" is not supported; send the body uncompressed`,
    );
  }

  let raw: Buffer;
  try {
    raw = await getRawBody(request, { length: declaredLength, limit });
  } catch (error) {
    // raw-body's failures carry a `type`; any other is the connection going away.
    if ((error as { type?: unknown } | null)?.type !== 'entity.too.large') {
      throw new ApiError(ErrorCode.BadRequest, 'Request body was incomplete: it ended before its declared length');
    }
    throw new ApiError(
      ErrorCode.PayloadTooLarge,
      `Request body is larger than ${bytes.format(limit)} (the server's BODY_LIMIT)`,
    );
  }
  if (raw.length === 0) {
    throw new ApiError(ErrorCode.BadRequest, `Request body is required: a JSON ${schema} object`);
  }
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new ApiError(ErrorCode.BadRequest, 'Request body is not valid UTF-8');
  }
  let read: JsonFields;
  try {
    read = readJsonFields(text, fields);
  } catch (error) {
    if (error instanceof NestingError) {
      const what = error.field === undefined ? 'Request body is not valid JSON' : `Invalid ${schema}`;
      throw new ApiError(ErrorCode.BadRequest, `${what}: ${error.message}`);
    }
    const detail = error instanceof SyntaxError ? `: ${error.message}` : '';
    throw new ApiError(ErrorCode.BadRequest, `Request body is not valid JSON${detail}`);
  }
  if ('notAnObject' in read) {
    throw new ApiError(ErrorCode.BadRequest, `Request body must be a JSON object (${schema})`);
  }
  return read.object;
}

/**
 * Reads a `@JsonBody` parameter (readJsonFields), before the global validation pipe validates it
 * against the parameter's class (`validateCustomDecorators`); other parameters pass untouched.
 * Pipes run after the guards, so an unauthenticated client costs no reading. Each step is linear
 * in the body, which BODY_LIMIT bounds; unknown properties are never walked.
 *
 * Order of checks: no body and no Content-Type (400), the media type and any Content-Encoding
 * (415), the size (413), an empty body, UTF-8, JSON syntax, the nesting, a JSON object, a field's
 * nesting (400 each); then the fields, in the validation pipe.
 */
@Injectable()
export class JsonBodyPipe implements PipeTransform {
  constructor(@Inject(CONFIG.http) private readonly config: ConfigSlice<'http'>) {}

  transform(value: unknown, { type, data, metatype }: ArgumentMetadata): unknown {
    if (type !== 'custom' || data !== JSON_BODY || metatype === undefined) return value;
    return readJsonObject(value as Request, this.config.bodyLimit, jsonBodyShape(metatype));
  }
}

// An int64 has at most 19 digits: anything longer is out of range whatever its exponent.
const MAX_INTEGER_DIGITS = 20;
const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** A plain JSON integer of at most 15 digits: exact as it is, the common case (every real id). */
const SHORT_INTEGER = /^-?(?:0|[1-9]\d{0,14})$/;
const [QUOTE, BACKSLASH, COLON, COMMA, ZERO] = [0x22, 0x5c, 0x3a, 0x2c, 0x30];
const [OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY] = [0x7b, 0x7d, 0x5b, 0x5d];
/** The deepest nesting of arrays and objects a body may have, anywhere in it. */
export const MAX_NESTING = 4096;

/** No field takes an array or object, but validation would recurse into one: its stack gives out first. */
export const MAX_FIELD_NESTING = 64;

/** A body nested deeper than MAX_NESTING, or a field's value deeper than MAX_FIELD_NESTING. */
export class NestingError extends RangeError {
  constructor(readonly field?: string) {
    super(
      field === undefined
        ? `nested more than ${MAX_NESTING} levels deep`
        : `${field} is nested more than ${MAX_FIELD_NESTING} levels deep`,
    );
    this.name = 'NestingError';
  }
}

/**
 * A JSON number's text as a `bigint` when its value is an integer (`5`, `-0`, `5.0`, `5e2`, as in
 * JSON Schema), exactly; otherwise a `number`, which can only fail validation. Linear in the
 * text; exponents are bounded before any arithmetic, so `1e999999999` costs nothing.
 */
export function parseJsonNumber(text: string): bigint | number {
  if (SHORT_INTEGER.test(text)) return BigInt(text);
  const match = JSON_NUMBER.exec(text);
  if (!match) return Number(text);
  const [, sign, intPart, fracPart = '', expPart = '0'] = match;
  const all = intPart + fracPart;
  let start = 0;
  while (start < all.length && all.charCodeAt(start) === ZERO) start++;
  let end = all.length;
  while (end > start && all.charCodeAt(end - 1) === ZERO) end--;
  if (start === end) return 0n;
  const exponent = Number(expPart) - fracPart.length + (all.length - end);
  if (exponent < 0) return Number(text);
  if (end - start + exponent > MAX_INTEGER_DIGITS) return Number(text);
  const magnitude = BigInt(all.slice(start, end)) * 10n ** BigInt(exponent);
  return sign === '-' ? -magnitude : magnitude;
}

/** Where a field's value stands in the text, and how deep it nests (0: not an array or object). */
type FieldSource = { start: number; end: number; nesting: number };

/**
 * One pass over valid JSON object text: checks its nesting against MAX_NESTING, and finds each of
 * the `wanted` keys' value (the last of a repeated key, as `JSON.parse` keeps) and its nesting.
 * Keys compare as JSON means them: `"\u0069d"` is `id`.
 */
function scanObject(text: string, wanted: ReadonlySet<string>): Map<string, FieldSource> {
  const found = new Map<string, FieldSource>();
  let depth = 0;
  let key: string | undefined;
  let valueStart = -1;
  let valueNesting = 0;
  let expectingKey = false;
  const keep = (end: number): void => {
    if (key !== undefined && valueStart >= 0 && wanted.has(key)) {
      found.set(key, { start: valueStart, end, nesting: valueNesting });
    }
    key = undefined;
    valueStart = -1;
    valueNesting = 0;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i++;
      let escaped = false;
      for (let d = text.charCodeAt(i); d !== QUOTE; d = text.charCodeAt(++i)) {
        if (d === BACKSLASH) {
          escaped = true;
          i++;
        }
      }
      if (depth === 1 && expectingKey) {
        key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        expectingKey = false;
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > MAX_NESTING) throw new NestingError();
      if (depth === 1) expectingKey = true;
      else if (depth - 1 > valueNesting) valueNesting = depth - 1;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 1) keep(i);
      depth--;
    } else if (depth === 1) {
      if (c === COLON) {
        valueStart = i + 1;
      } else if (c === COMMA) {
        keep(i);
        expectingKey = true;
      }
    }
  }
  return found;
}

const wantedSets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** What `readJsonFields` found: the object's fields, or what the body was instead of an object. */
export type JsonFields = { object: Record<string, unknown> } | { notAnObject: true };

/**
 * The named `fields` of the JSON object in `text` (`undefined` when absent), integers exact as
 * `bigint` (`JSON.parse` alone rounds past 2^53). `JSON.parse` reads the text (any nesting; its
 * SyntaxError for bad text), then scanObject checks the nesting and finds each field's text.
 * Both are linear and neither calls into JavaScript per value, as a reviver would, so the cost
 * per byte hardly depends on the body's shape (docs/performance-log.md). `__proto__` is an
 * ordinary own property, never a prototype.
 */
export function readJsonFields(text: string, fields: readonly string[]): JsonFields {
  const value = JSON.parse(text) as unknown;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    // Still refused for its nesting first, as a deep object would be.
    scanObject(text, new Set());
    return { notAnObject: true };
  }
  const body = value as Record<string, unknown>;
  let wanted = wantedSets.get(fields);
  if (wanted === undefined) {
    wanted = new Set(fields);
    wantedSets.set(fields, wanted);
  }
  const sources = scanObject(text, wanted);
  const taken: Record<string, unknown> = {};
  for (const field of fields) {
    const source = sources.get(field);
    if (source === undefined) {
      taken[field] = undefined;
    } else if (source.nesting > MAX_FIELD_NESTING) {
      throw new NestingError(field);
    } else {
      const found = body[field];
      taken[field] = typeof found === 'number' ? parseJsonNumber(text.slice(source.start, source.end).trim()) : found;
    }
  }
  return { object: taken };
}
