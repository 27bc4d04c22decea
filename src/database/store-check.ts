/**
 * Whether the store would take a create now, for the health probes and for ending an outage:
 * one implementation for each kind of store (`DatabaseModule`), chosen like the feature stores.
 * Both throw StoreUnavailableError (or a driver error) when it would not.
 */
export abstract class StoreCheck {
  /**
   * Everything a create needs short of writing one: the files or the connection, the tables and
   * the right to write them, a store that is not read-only. Cheap enough for every probe.
   */
  abstract ready(): Promise<void>;

  /** While an outage lasts, about once a second: that a write goes through again. */
  abstract takesWrites(): Promise<void>;
}
