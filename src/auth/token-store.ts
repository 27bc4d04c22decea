export interface TokenRecord {
  name: string;
  revokedAt: string | null;
}

/**
 * The look-up every authenticated request makes, and the DI token for it: one implementation
 * per store (`stores/`), chosen once at module wiring (storeProvider). Failures of the store
 * reject with StoreUnavailableError. BearerStrategy decides how a turn's look-ups share reads;
 * the store says only how it reads best.
 */
export abstract class TokenStore {
  /**
   * Whether look-ups are best gathered over a turn of the event loop into one read (a round trip
   * to a server), rather than each read at once (an index probe in a local file).
   */
  abstract readonly gathersATurn: boolean;

  /** The tokens whose SHA-256 is among `hashes`, revoked or not; a hash with none is left out. */
  abstract findByHashes(hashes: readonly string[]): Promise<ReadonlyMap<string, TokenRecord>>;
}
