export const TOKEN_STORE = Symbol('TokenStore');

export interface TokenRecord {
  name: string;
  revokedAt: string | null;
}

/**
 * The lookup every authenticated request makes. One implementation per store (`stores/`),
 * chosen once at module wiring. Failures of the store reject with StoreUnavailableError.
 */
export interface TokenStore {
  /** The token whose SHA-256 is `hash`, revoked or not; undefined when there is none. */
  findByHash(hash: string): Promise<TokenRecord | undefined>;
}
