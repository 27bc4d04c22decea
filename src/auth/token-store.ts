export interface TokenRecord {
  name: string;
  revokedAt: string | null;
}

/**
 * The look-up every authenticated request makes, and the DI token for it: one implementation
 * per store (`stores/`), chosen once at module wiring (storeProvider). Failures of the store
 * reject with StoreUnavailableError.
 */
export abstract class TokenStore {
  /** The token whose SHA-256 is `hash`, revoked or not; undefined when there is none. */
  abstract findByHash(hash: string): Promise<TokenRecord | undefined>;
}
