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
import { getMetadataStorage } from 'class-validator';
import contentType from 'content-type';
import type { Request } from 'express';
import getRawBody from 'raw-body';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { ApiError, invalidBody } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { parseJsonNumber, sourcesOf } from './json-numbers';

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

/** The ValidationPipe's options, global and `plants import`'s: read strictly, unknown fields dropped. */
export const VALIDATION_OPTIONS: ValidationPipeOptions = {
  transform: true,
  validateCustomDecorators: true, // the body comes from @JsonBody
  whitelist: true,
  forbidUnknownValues: true,
  transformOptions: { enableImplicitConversion: false }, // no coercion: "5" is not an id
  validationError: { target: true, value: false },
  stopAtFirstError: true,
  exceptionFactory: invalidBody,
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
