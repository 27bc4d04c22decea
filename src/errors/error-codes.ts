/** Every failure is HTTP 400; `error` is the status it would carry otherwise. One table for filter, OpenAPI, docs, tests. */
export const ErrorCode = {
  BadRequest: 400,
  Unauthorized: 401,
  NotFound: 404,
  MethodNotAllowed: 405,
  Conflict: 409,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  ExpectationFailed: 417,
  TooManyRequests: 429,
  RequestHeaderFieldsTooLarge: 431,
  InternalServerError: 500,
  ServiceUnavailable: 503,
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export const ERROR_CODE_MEANINGS: Readonly<Record<ErrorCode, string>> = {
  400: 'malformed JSON or HTTP, empty body, body not an object, a field missing or of the wrong type',
  401: 'no Authorization header, another scheme, a missing, unknown or revoked token',
  404: 'no such path',
  405: 'the path exists, the method does not (header Allow: POST)',
  409: 'the id is taken by a different plant',
  413: 'body over the size limit (BODY_LIMIT)',
  415: 'Content-Type is not application/json',
  417: 'an Expect header other than 100-continue',
  429: 'the token is over its rate limit (RATE_LIMIT; header Retry-After)',
  431: 'request headers over the server limit',
  500: 'anything unexpected',
  503: 'the store is unavailable or the server is shutting down (header Retry-After)',
};

export const ERROR_CODES: readonly ErrorCode[] = Object.values(ErrorCode);

export function isErrorCode(value: number): value is ErrorCode {
  return (ERROR_CODES as readonly number[]).includes(value);
}

export interface ErrorBody {
  error: ErrorCode;
  message: string;
}

/** The answer for any path but `/plants`, from Nest's router and from the /docs allowlist alike. */
export const NOT_FOUND: ErrorBody = {
  error: ErrorCode.NotFound,
  message: 'Not found: no such path; the interface is POST /plants, documented at /docs',
};
