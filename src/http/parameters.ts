import { type ArgumentMetadata, Injectable, type PipeTransform } from '@nestjs/common';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export const int64Expected = (name: string): string =>
  `${name} must be an integer from ${INT64_MIN} to ${INT64_MAX} (int64)`;

const refused = (message: string): ApiError => new ApiError(ErrorCode.BadRequest, message);

/**
 * An int64 path or query parameter, exact (`ParseIntPipe` goes through a number, which rounds past
 * 2^53): `@Param('id', ParseInt64Pipe) id: bigint`. A decimal integer in range, else 400.
 */
@Injectable()
export class ParseInt64Pipe implements PipeTransform<string | bigint, bigint> {
  transform(value: string | bigint, { data }: ArgumentMetadata): bigint {
    return parseInt64(value, data ?? 'it');
  }
}

function parseInt64(value: string | bigint, name: string): bigint {
  const exact = typeof value === 'bigint' ? value : /^-?\d{1,19}$/.test(value) ? BigInt(value) : undefined;
  if (exact === undefined || exact < INT64_MIN || exact > INT64_MAX) throw refused(int64Expected(name));
  return exact;
}

/** A number parameter as JSON writes one. */
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A named path or query parameter as the global pipe reads it, by its declared type: a `number`
 * exactly (never NaN, never rounded past 2^53), a `bigint` as ParseInt64Pipe reads it, a `boolean`
 * only from `true` or `false`. Anything else is given back for Nest's own reading.
 */
export function strictParameter(value: string, { type, metatype, data }: ArgumentMetadata): unknown {
  if ((type !== 'param' && type !== 'query') || data === undefined) return value;
  if ((metatype as unknown) === BigInt) return parseInt64(value, data);
  if (metatype === Number) {
    const number = Number(value);
    if (!NUMBER.test(value) || !Number.isFinite(number)) throw refused(`${data} must be a number`);
    if (Number.isInteger(number) && !Number.isSafeInteger(number)) {
      throw refused(`${data} is past 2^53, where a number is not exact: declare it bigint (ParseInt64Pipe)`);
    }
    return number;
  }
  if (metatype === Boolean && value !== 'true' && value !== 'false') throw refused(`${data} must be true or false`);
  return value;
}
