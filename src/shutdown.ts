import type { Server as NetServer } from 'node:net';
import type { Logger } from 'pino';
import type { ShutdownState } from './health/shutdown-state';
import type { Drain } from './edge/drain';
import { exitAfterLogs } from './observability/logger';

/** Past this (after SHUTDOWN_DELAY), a shutdown that is still waiting on something gives up (exit code 1). */
export const SHUTDOWN_DEADLINE_MS = 10_000;

/** At most how long a shutdown keeps accepting the connections already waiting in the kernel. */
export const ACCEPT_BACKLOG_MS = 1_000;

/** The signals that ask for a graceful stop. */
export const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/**
 * Stops listening on every socket of the public port (`listeners`, the HTTP server's first), and
 * resolves once every connection has closed.
 *
 * Connections the kernel has completed but this process has not accepted yet (its event loop was
 * busy) would be reset when their listener closes, their requests lost. Node accepts them over
 * several turns of its event loop, so the listeners stay open until a turn accepts none (each
 * is then answered 503 by the drain), for at most ACCEPT_BACKLOG_MS; then all close at once.
 */
function stopListening(listeners: readonly NetServer[]): Promise<void> {
  const [server] = listeners;
  return new Promise((resolve) => {
    let accepted = 0;
    const count = (): void => void accepted++;
    // Every connection reaches the HTTP server's 'connection', whichever socket accepted it.
    server.on('connection', count);
    const giveUpAt = Date.now() + ACCEPT_BACKLOG_MS;
    let seen = -1;
    const turn = (): void => {
      if (accepted === seen || Date.now() > giveUpAt) {
        server.off('connection', count);
        void Promise.all(listeners.map((listener) => new Promise((closed) => listener.close(closed)))).then(() =>
          resolve(),
        );
        return;
      }
      seen = accepted;
      setImmediate(turn);
    };
    setImmediate(turn);
  });
}

/**
 * What SIGTERM/SIGINT do: readiness (and `/health`) fail at once; for `delayMs` (SHUTDOWN_DELAY)
 * everything else goes on as before, so that a load balancer or Kubernetes, probing every few
 * seconds, sees it and stops routing here before anything is refused; then refuse new requests,
 * close idle connections, let the requests in flight finish, stop accepting, close the
 * application (and with it the store) and exit 0; exit 1 if the drain takes longer than
 * SHUTDOWN_DEADLINE_MS or fails. (Nest's enableShutdownHooks would re-raise the signal and so
 * exit 143; and Nest's own close would close the store before the last answers.)
 */
export function gracefulShutdown(
  port: { readonly listeners: readonly NetServer[] },
  drain: Drain,
  state: ShutdownState,
  delayMs: number,
  closeApp: () => Promise<void>,
  logger: Logger,
): (signal: NodeJS.Signals) => void {
  return (signal) => {
    if (state.requested) return;
    state.request();
    const began = Date.now();
    if (delayMs > 0) {
      logger.info(
        { context: 'Shutdown', delayMs },
        `${signal}: not ready; serving for ${delayMs} ms more before the drain`,
      );
    }
    setTimeout(() => {
      logger.error({ context: 'Shutdown' }, `still busy ${SHUTDOWN_DEADLINE_MS} ms into the drain; exiting anyway`);
      exitAfterLogs(logger, 1);
    }, delayMs + SHUTDOWN_DEADLINE_MS).unref();
    // The line is written once the drain has begun, never before: a client (or a test) that reads
    // it and then sends a request must find that request refused.
    const beginDrain = (): Promise<void> => {
      const drained = drain.begin();
      logger.info({ context: 'Shutdown' }, `${signal}: finishing requests in flight, then closing the store`);
      return drained;
    };
    // The port stays open while the requests in flight finish, answering what arrives meanwhile
    // (503, and the probes: readiness 503, liveness 200), so that a load balancer or Kubernetes
    // sees a draining instance rather than a vanished one; then it closes.
    (delayMs > 0 ? new Promise((resolve) => setTimeout(resolve, delayMs)).then(beginDrain) : beginDrain())
      .then(() => stopListening(port.listeners))
      .then(closeApp)
      .then(
        () => {
          const drainMs = Date.now() - began;
          logger.info({ context: 'Shutdown', drainMs }, `stopped: drained and closed the store in ${drainMs} ms`);
          exitAfterLogs(logger, 0);
        },
        (error: unknown) => {
          logger.error({ context: 'Shutdown', err: error }, 'could not close cleanly');
          exitAfterLogs(logger, 1);
        },
      );
  };
}
