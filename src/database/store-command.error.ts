/** An operator's store command that cannot be done as asked; the message says what to do. */
export class StoreCommandError extends Error {}
