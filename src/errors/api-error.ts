import { HttpException } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
import { ErrorCode } from './error-codes';

export class ApiError extends HttpException {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super({ error: code, message }, code);
    this.name = 'ApiError';
  }
}

/** One message naming the schema and every bad field: "Invalid NewPlant: id is required; …". */
export function invalidBody(errors: ValidationError[]): ApiError {
  const messages = (list: ValidationError[]): string[] =>
    list.flatMap((error) => [...Object.values(error.constraints ?? {}), ...messages(error.children ?? [])]);
  const schema = errors[0]?.target?.constructor.name ?? 'body';
  return new ApiError(ErrorCode.BadRequest, `Invalid ${schema}: ${messages(errors).join('; ')}`);
}

/** The store cannot take a create now; each store turns its driver's failures of that kind into this. */
export class StoreUnavailableError extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`The store is unavailable: ${reason}`, options);
    this.name = 'StoreUnavailableError';
  }
}

/** `work`, or a StoreUnavailableError saying `reason` once `ms` have passed without its answer. */
export async function answeredWithin<T>(work: Promise<T>, ms: number, reason: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(reason)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
