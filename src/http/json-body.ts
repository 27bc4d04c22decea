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
import { type JsonFields, NestingError, readJsonFields } from './json-fields';

/** What `@JsonBody` reads for a class: its schema's name (for messages) and the properties taken. */
export interface JsonBodyShape {
  schema: string;
  fields: readonly string[];
}

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

/** How JsonBodyPipe tells a `@JsonBody` parameter from the others. */
const JSON_BODY = 'json-body';

const request = createParamDecorator((_data: typeof JSON_BODY, context: ExecutionContext) =>
  // By position, as the guard reads it: `switchToHttp()` makes an object and three closures.
  context.getArgByIndex<unknown>(0),
);

/**
 * `@JsonBody()`: the request's body, a JSON object, with only the fields of the parameter's class
 * taken from it (read by JsonBodyPipe), then validated against that class by the global
 * validation pipe. Nest's own JSON parser stays off (`bodyParser: false`): `JSON.parse` alone
 * would round big ids before anything could see them. (A parameter rather than an interceptor:
 * an interceptor costs every request an rxjs pipeline; see docs/performance-log.md.)
 */
export function JsonBody(): ParameterDecorator {
  return request(JSON_BODY);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** raw-body's failures carry a `type`; anything else while reading is the connection going away. */
function readFailure(error: unknown, limit: number): ApiError {
  const type = (error as { type?: unknown } | null)?.type;
  if (type === 'entity.too.large') {
    return new ApiError(
      ErrorCode.PayloadTooLarge,
      `Request body is larger than ${bytes.format(limit)} (the server's BODY_LIMIT)`,
    );
  }
  return new ApiError(ErrorCode.BadRequest, 'Request body was incomplete: it ended before its declared length');
}

/**
 * The last Content-Type header that was acceptable: a client sends the same one with every
 * request, and parsing it makes two objects.
 */
let acceptedMediaType: string | undefined;

function checkMediaType(header: string | undefined): void {
  if (header !== undefined && header === acceptedMediaType) return;
  let parsed: contentType.ParsedMediaType | undefined;
  try {
    parsed = header === undefined ? undefined : contentType.parse(header);
  } catch {
    parsed = undefined;
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
    throw readFailure(error, limit);
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
 * Reads the body of a `@JsonBody` parameter: a JSON object, with only the shape's fields taken
 * from it, numbers among them exact (see readJsonFields). Registered globally before the
 * validation pipe, which then validates what it read against the parameter's class
 * (`validateCustomDecorators`); any other parameter passes through untouched.
 *
 * Pipes run after the guards, so an unauthenticated client costs no reading or parsing (and its
 * connection is closed rather than drained; see writeError). Every step of reading is linear in
 * the body, whatever its shape, and BODY_LIMIT bounds the body; what comes after never walks the
 * unknown properties, however many or deep.
 *
 * Order of checks: no body and no Content-Type (400, "required"), the media type and any
 * Content-Encoding (415), the size (413), an empty body (400), UTF-8 (400), JSON syntax (400),
 * the nesting (400), a JSON object (400), a field's nesting (400); then the fields, in the
 * validation pipe.
 */
@Injectable()
export class JsonBodyPipe implements PipeTransform {
  constructor(@Inject(CONFIG.http) private readonly config: ConfigSlice<'http'>) {}

  transform(value: unknown, { type, data, metatype }: ArgumentMetadata): unknown {
    if (type !== 'custom' || data !== JSON_BODY || metatype === undefined) return value;
    return readJsonObject(value as Request, this.config.bodyLimit, jsonBodyShape(metatype));
  }
}
