import type { IncomingMessage } from 'node:http';

const PROBES = new Set(['/health', '/health/live', '/health/ready']);

/**
 * A health probe: answered while draining and never shed under load (the store's and readiness
 * probes then say 503 themselves; a liveness probe refused would get the process restarted).
 */
export function isProbe(request: IncomingMessage): boolean {
  return request.method === 'GET' && PROBES.has(request.url ?? '');
}
