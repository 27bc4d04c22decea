/**
 * Keeps the store's write-ahead log bounded while the server runs, off the event loop: one
 * implementation for each kind of store (`DatabaseModule`), chosen like the feature stores.
 * PostgreSQL checkpoints by itself; SQLite's own checkpoint would run on the connection that
 * commits, on the event loop (SqliteCheckpointer).
 */
export abstract class Checkpointer {}

/** PostgreSQL's server runs its own checkpoints: nothing to do here. */
export class ServerCheckpointer extends Checkpointer {}
