import type { Server } from 'node:http';
import { writeUnavailable } from '../errors/error-response';
import type { AnswerOrder } from './answer-order';

/** How often responses are checked against their deadline. */
export const DEADLINE_CHECK_MS = 1_000;

/**
 * Every response is delivered within `deadlineMs` of its request's start: one whose answer has
 * begun but not been read (a client reading a byte a second keeps the idle timeout from firing)
 * has its connection cut; a request that arrived whole but has no answer yet (nothing the
 * service waits for should last this long: every store wait is bounded) is answered 503 and its
 * connection closed. One check of every open connection each DEADLINE_CHECK_MS, against the
 * deadline less that period, rather than a timer and a listener for every request.
 */
export function enforceResponseDeadline(server: Server, order: AnswerOrder, deadlineMs: number): void {
  const check = setInterval(() => {
    const late = Date.now() - (deadlineMs - DEADLINE_CHECK_MS);
    for (const connection of order.connections()) {
      const response = connection.active;
      if (response === undefined || connection.since > late) continue;
      if (response.headersSent || !response.req.complete) {
        response.destroy();
      } else {
        writeUnavailable(response.req, response, 'The server could not answer in time; try again');
      }
    }
  }, DEADLINE_CHECK_MS).unref();
  server.once('close', () => clearInterval(check));
}
