/** Past this, a shutdown that is still waiting on something gives up (exit code 1). */
export const SHUTDOWN_DEADLINE_MS = 10_000;

/** The signals that ask for a graceful stop. */
export const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
