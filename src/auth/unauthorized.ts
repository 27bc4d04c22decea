import type { Request } from 'express';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';

export const REALM = 'plant-store';

/** The 401 for a request that passport turned away, saying what was wrong with what it sent. */
export function unauthorized(request: Request): ApiError {
  const header = request.headers.authorization?.trim() ?? '';
  const sentBearer = /^bearer\s+\S/i.test(header);
  let message: string;
  if (header === '') {
    message = 'Missing credentials: send Authorization: Bearer <token>';
  } else if (/^bearer$/i.test(header)) {
    message = 'Missing token: the Authorization header says Bearer but carries no token';
  } else if (!sentBearer) {
    message = 'Unsupported authorization scheme: use Authorization: Bearer <token>';
  } else {
    message = 'Invalid or revoked token';
  }
  const challenge = sentBearer ? `Bearer realm="${REALM}", error="invalid_token"` : `Bearer realm="${REALM}"`;
  return new ApiError(ErrorCode.Unauthorized, message, { 'WWW-Authenticate': challenge });
}

/** A failure while the token was checked that is not the client's (the store's): passed on as it is. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error('token check failed', { cause: error });
}
