import type { IncomingMessage, ServerResponse } from 'node:http';
import { writeUnavailable } from '../errors/error-response';
import { isProbe } from './probes';

/**
 * Sheds load cheaply: past `max` requests in flight in this process, a request is answered at
 * once with 503 and `Retry-After` (the client's retries honour it), before its body is read or
 * its token looked up, and its connection is closed; so latency and memory stay bounded however
 * many clients connect. A request is in flight from the moment it reaches the application until
 * its response is done. The default is measured in docs/performance-log.md.
 */
export class InFlightLimit {
  private inFlight = 0;
  private readonly done = (): void => void this.inFlight--;

  constructor(private readonly max: number) {}

  /** True when this answered the request (503); otherwise it counts until the response closes. */
  refused(request: IncomingMessage, response: ServerResponse): boolean {
    if (this.inFlight >= this.max && !isProbe(request)) {
      writeUnavailable(request, response, 'The server is at capacity; try again shortly');
      return true;
    }
    this.inFlight++;
    response.once('close', this.done);
    return false;
  }
}
