import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import bytes from 'bytes';
import contentType from 'content-type';
import type { Request } from 'express';
import getRawBody from 'raw-body';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { parseJsonLossless } from './lossless-json';

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
 * request, and parsing it each time made two objects a request.
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

async function readJsonObject(request: Request, limit: number, schema: string): Promise<Record<string, unknown>> {
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
  let value: unknown;
  try {
    value = parseJsonLossless(text);
  } catch (error) {
    if (error instanceof RangeError) {
      throw new ApiError(ErrorCode.BadRequest, 'Request body is not valid JSON: nested too deeply');
    }
    const detail = error instanceof SyntaxError ? `: ${error.message}` : '';
    throw new ApiError(ErrorCode.BadRequest, `Request body is not valid JSON${detail}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ApiError(ErrorCode.BadRequest, `Request body must be a JSON object (${schema})`);
  }
  return value as Record<string, unknown>;
}

/** Where `createApp` puts BODY_LIMIT for `@JsonBody()`: an Express app setting, like Express's own. */
export const BODY_LIMIT_SETTING = 'plant-store body limit';

/** What `@JsonBody` reads: the schema's name (for messages) and the properties taken. */
export interface JsonBodyShape {
  schema: string;
  fields: readonly string[];
}

/**
 * `@JsonBody({ schema, fields })`: the request's body, a JSON object, with only `fields` taken from it;
 * the global ValidationPipe then validates it against the parameter's class
 * (`validateCustomDecorators`). Nest's own JSON parser stays off (`bodyParser: false`):
 * `JSON.parse` would round big ids before anything could see them.
 *
 * The body is read when Nest resolves the handler's parameters, which is after the guards, so an
 * unauthenticated client costs no reading or parsing (and its connection is closed rather than
 * drained; see writeError). Every step of reading it is linear in the body, whatever its shape
 * (see parseJsonNumber), and BODY_LIMIT bounds the body; what comes after never walks the
 * unknown properties, however many or deep. (A parameter decorator rather than an interceptor:
 * interceptors cost every request an rxjs pipeline, a large share of what a create allocated;
 * see docs/performance.md.)
 *
 * Order of checks: no body and no Content-Type (400, "required"), the media type and any
 * Content-Encoding (415), the size (413), an empty body (400), UTF-8 (400), JSON syntax (400), a
 * JSON object (400); then the fields, in the validation pipe.
 */
export const JsonBody = createParamDecorator(
  async ({ schema, fields }: JsonBodyShape, context: ExecutionContext): Promise<Record<string, unknown>> => {
    const request = context.getArgByIndex<Request>(0); // as the guard reads it: no switchToHttp() object
    const limit = request.app.get(BODY_LIMIT_SETTING) as number | undefined;
    if (limit === undefined) throw new Error(`the Express setting "${BODY_LIMIT_SETTING}" is missing`);
    const body = await readJsonObject(request, limit, schema);
    const taken: Record<string, unknown> = {};
    for (const field of fields) taken[field] = Object.hasOwn(body, field) ? body[field] : undefined;
    return taken;
  },
);
