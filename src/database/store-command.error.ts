/** An operator's store command that cannot be done as asked; the message says what to do. */
export class StoreCommandError extends Error {}

/**
 * An operator's store command that failed on its way (a full disk, an I/O error) and left
 * nothing behind; the message, one line, says what failed. Exit code 1, where a command that
 * cannot be done as asked (StoreCommandError) exits 2.
 */
export class StoreCommandFailure extends Error {}
