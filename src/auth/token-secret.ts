import { createHash, randomBytes } from 'node:crypto';

export const TOKEN_PREFIX = 'pst_';
/** `pst_` + 43 base64url characters: 32 random bytes. */
export const TOKEN_PATTERN = /^pst_[A-Za-z0-9_-]{43}$/;

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * What the store keeps instead of the token: lower-case hex SHA-256. A request's token is found
 * by looking its hash up (an index probe), never by comparing secrets, so how long a refusal
 * takes depends on the hash, which an attacker cannot steer towards a stored one.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
