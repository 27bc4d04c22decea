import type { Registry } from '@prometheus-io/client';
import { noop } from 'rxjs';

/** The route label of answers that matched no route: never a raw path, whose values are unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

export interface AnsweredRequest {
  /** Undefined for bytes that never became a request (`_OTHER`). */
  method: string | undefined;
  route: string;
  status: number;
  error?: number;
  durationMs?: number;
}

export type CreateOutcome = 'created' | 'replayed' | 'conflict';

/**
 * What the service counts, always injectable: `PrometheusMetrics` while METRICS_PORT is set (it
 * counts into the registry `/metrics` serves), `noMetrics()` otherwise.
 */
export abstract class Metrics {
  /** What `/metrics` serves: nothing while METRICS_PORT is unset. */
  abstract readonly registry: Registry | undefined;
  abstract answered(request: AnsweredRequest): void;
  abstract created(outcome: CreateOutcome): void;
  abstract committed(batchSize: number, seconds: number): void;
  abstract storeAvailable(up: boolean): void;
  abstract tokenLookedUp(result: 'valid' | 'invalid' | 'unavailable'): void;
  abstract rateLimitRefused(): void;
  abstract rateLimitStoreFailed(): void;
}

/** Metrics that count nothing: each is rxjs's `noop`, so that nothing of ours runs where nothing is read. */
export const noMetrics = (): Metrics => ({
  registry: undefined,
  answered: noop,
  created: noop,
  committed: noop,
  storeAvailable: noop,
  tokenLookedUp: noop,
  rateLimitRefused: noop,
  rateLimitStoreFailed: noop,
});
