import { type ArgumentMetadata, Injectable, type PipeTransform } from '@nestjs/common';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export const isInt64 = (value: unknown): value is bigint =>
  typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;

export const int64Expected = (name: string): string =>
  `${name} must be an integer from ${INT64_MIN} to ${INT64_MAX} (int64)`;

/**
 * An int64 path or query parameter, exact (`ParseIntPipe` goes through a number, which rounds past
 * 2^53): `@Param('id', ParseInt64Pipe) id: bigint`. A decimal integer in range, else 400.
 */
@Injectable()
export class ParseInt64Pipe implements PipeTransform<string | bigint, bigint> {
  transform(value: string | bigint, { data }: ArgumentMetadata): bigint {
    const exact = typeof value === 'bigint' ? value : /^-?\d{1,19}$/.test(value) ? BigInt(value) : undefined;
    if (!isInt64(exact)) throw new ApiError(ErrorCode.BadRequest, int64Expected(data ?? 'the parameter'));
    return exact;
  }
}
