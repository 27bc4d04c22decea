import { HttpException } from '@nestjs/common';
import type { ErrorCode } from './error-codes';

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
