import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import bytes from 'bytes';
import contentType from 'content-type';
import type { Request } from 'express';
import getRawBody from 'raw-body';
import type { Observable } from 'rxjs';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { parseJsonNumber, sourcesOf } from './json-numbers';
import { IS_PUBLIC_KEY } from './public.decorator';

/** Where JSON.parse may have rounded a number: 16 digits or more, or an exponent (`1e-400` is 0). */
const MAY_ROUND = /\d{16}|\d[\d.]{16}|\d[eE][+-]?\d/;

/**
 * `JSON.parse`, exact where it would round: an integer member of the object (top level) past 2^53
 * is an exact `bigint`, and a fraction member it would make an integer (`1.0000000000000001`) is
 * NaN; every other value is JSON.parse's. Nested values are never walked.
 */
export function parseJson(text: string): unknown {
  const body = JSON.parse(text) as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !MAY_ROUND.test(text)) return body;
  const members = body as Record<string, unknown>;
  // Any integer may be one that was rounded: each is read again from its text.
  const integers = Object.keys(members).filter((key) => Number.isInteger(members[key]));
  if (integers.length === 0) return body;
  const sources = sourcesOf(text, integers);
  for (const key of integers) {
    const exact = parseJsonNumber(sources[key]!);
    if (typeof exact !== 'bigint' || !Number.isSafeInteger(members[key])) members[key] = exact;
  }
  return body;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

const badBody = (message: string): ApiError => new ApiError(ErrorCode.BadRequest, `Request body ${message}`);

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

/** The body's text, once its headers are accepted; empty when none was sent. */
async function readText(request: Request, limit: number): Promise<string> {
  checkMediaType(request);
  const length = request.headers['content-length'];
  const tooLarge = (): ApiError =>
    new ApiError(
      ErrorCode.PayloadTooLarge,
      `Request body is larger than ${bytes.format(limit)} (the server's BODY_LIMIT)`,
    );
  if (length !== undefined && Number(length) > limit) throw tooLarge();
  // Only now, with the request accepted on its headers, is the client told to send its body.
  if (request.httpVersionMinor === 1 && /^100-continue$/i.test(request.headers.expect ?? '')) {
    request.res?.writeContinue();
  }
  let raw: Buffer;
  try {
    raw = await getRawBody(request, { length, limit });
  } catch (error) {
    if ((error as { type?: unknown } | null)?.type === 'entity.too.large') throw tooLarge();
    throw badBody('was incomplete: it ended before its declared length');
  }
  try {
    return utf8.decode(raw);
  } catch {
    throw badBody('is not valid UTF-8');
  }
}

/**
 * Nest's body parser stays off, for two reasons: `JSON.parse` alone rounds ids past 2^53, and a
 * body is read only once the guards have let its client in (an interceptor runs after them). So
 * `@Body()` gets the JSON of a request that sent one, exact (`parseJson`); a `@Public()` route's
 * body is never read.
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly reflector: Reflector,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    const { headers } = request;
    const sent = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
    if ((sent || headers['content-type'] !== undefined) && !this.isPublic(context)) {
      const text = await readText(request, this.config.bodyLimit);
      if (text !== '') {
        try {
          request.body = parseJson(text);
        } catch (error) {
          throw badBody(`is not valid JSON${error instanceof SyntaxError ? `: ${error.message}` : ''}`);
        }
      }
    }
    return next.handle();
  }

  private isPublic(context: ExecutionContext): boolean {
    const targets = [context.getHandler(), context.getClass()];
    return this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC_KEY, targets) === true;
  }
}
