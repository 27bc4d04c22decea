import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** A client's own id is kept when it is short and plain; anything else gets a fresh UUID. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(request: Pick<IncomingMessage, 'headers'>): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && SANE_REQUEST_ID.test(sent) ? sent : randomUUID();
}
