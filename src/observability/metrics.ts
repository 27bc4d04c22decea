import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from '@prometheus-io/client';

/** The OpenTelemetry HTTP semantic conventions' buckets for `http.server.request.duration`. */
export const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** Store commits take from well under a millisecond (SQLite, one row) to a stalled disk. */
const COMMIT_DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/** The route label of answers that matched no route: never their raw path, whose values are unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

/** One answer on the public port, as the metrics see it (the request's log line has these too). */
export interface AnsweredRequest {
  /** `_OTHER` when absent (bytes that never became a request). */
  method: string | undefined;
  /** The route template, or `unmatched`: never the raw path, whose values are unbounded. */
  route: string;
  status: number;
  /** The contract code of a failure; undefined on success. */
  error?: number;
  /** Undefined (counted as 0) for bytes refused before they became a request. */
  durationMs?: number;
}

/** What this build is: its version and commit (dist/build-info.json, written by the build), and the Node it runs on. */
export function buildInfo(): { version: string; commit: string; node: string } {
  const root = join(__dirname, '..', '..');
  let written: { version?: string; commit?: string } = {};
  try {
    written = JSON.parse(readFileSync(join(root, 'dist', 'build-info.json'), 'utf8')) as typeof written;
  } catch {
    // not built by `npm run build` (npm start, the tests' sources): the version from package.json
  }
  const version =
    written.version ?? (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  return { version, commit: written.commit ?? 'unknown', node: process.version };
}

/**
 * What the service counts, in Prometheus' terms, through the maintained client
 * (@prometheus-io/client). One instance per process, made once from the configuration: with
 * METRICS_PORT unset it holds no registry and counts nothing, so metrics off cost nothing.
 * With WORKERS > 1 each worker counts its own and the primary's ClusterRegistry sums them on
 * each scrape (see `metrics-server.ts`); what describes one process (its memory, file
 * descriptors, event loop: the runtime's default metrics) carries a `worker` label instead, since
 * a sum of those means nothing.
 */
export class Metrics {
  readonly registry: Registry | undefined;
  private readonly requests?: Histogram<
    'http_request_method' | 'http_route' | 'http_response_status_code' | 'error_code'
  >;
  private readonly creates?: Counter<'outcome'>;
  private readonly commitDuration?: Histogram;
  private readonly batchSize?: Histogram;
  private readonly storeUp?: Gauge;
  private readonly tokenLookups?: Counter<'result'>;
  private readonly rateLimited?: Counter;
  private readonly rateLimitStoreErrors?: Counter;
  private readonly connectionsRefused?: Counter;

  /** Metrics that count nothing: METRICS_PORT is unset. */
  static off(): Metrics {
    return new Metrics(undefined);
  }

  /**
   * Metrics in a registry of this process's own, with the runtime's default metrics; `worker`:
   * the cluster worker's id, which labels those, when this process is one of WORKERS.
   */
  static on(worker?: number): Metrics {
    const registry = new Registry();
    collectDefaultMetrics({
      register: registry,
      ...(worker === undefined ? {} : { labels: { worker: String(worker) } }),
    });
    return new Metrics(registry);
  }

  private constructor(registry: Registry | undefined) {
    this.registry = registry;
    if (registry === undefined) return;
    const registers = [registry];
    this.requests = new Histogram({
      name: 'http_server_request_duration_seconds',
      help: 'Duration of HTTP server requests on the public port, by method, route, status and contract error code',
      labelNames: ['http_request_method', 'http_route', 'http_response_status_code', 'error_code'],
      buckets: HTTP_DURATION_BUCKETS,
      registers,
    });
    this.creates = new Counter({
      name: 'plant_store_creates_total',
      help: 'Creates answered 200 or 409, by outcome: created, replayed (the same plant again) or conflict',
      labelNames: ['outcome'],
      registers,
    });
    this.commitDuration = new Histogram({
      name: 'plant_store_commit_duration_seconds',
      help: 'Duration of each store commit (one per batch of creates)',
      buckets: COMMIT_DURATION_BUCKETS,
      registers,
    });
    this.batchSize = new Histogram({
      name: 'plant_store_commit_batch_size',
      help: 'Creates written by each store commit',
      buckets: BATCH_SIZE_BUCKETS,
      registers,
    });
    this.storeUp = new Gauge({
      name: 'plant_store_store_up',
      help: '1 while the store answers, 0 during a store outage (in any worker)',
      aggregator: 'min',
      registers,
    });
    this.storeUp.set(1);
    const build = buildInfo();
    new Gauge({
      name: 'plant_store_build_info',
      help: 'Always 1: the version and commit of the build, and the Node.js that runs it, as labels',
      labelNames: ['version', 'commit', 'node'],
      aggregator: 'first',
      registers,
    })
      .labels(build.version, build.commit, build.node)
      .set(1);
    this.tokenLookups = new Counter({
      name: 'plant_store_token_lookups_total',
      help: 'Bearer tokens looked up in the store, by result: valid, invalid (unknown or revoked) or unavailable',
      labelNames: ['result'],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'plant_store_rate_limited_total',
      help: 'Requests refused with code 429 (RATE_LIMIT)',
      registers,
    });
    this.rateLimitStoreErrors = new Counter({
      name: 'plant_store_rate_limit_store_errors_total',
      help: 'Requests let through uncounted because the rate limit store (RATE_LIMIT_REDIS_URL, or the primary under WORKERS) did not answer',
      registers,
    });
    this.connectionsRefused = new Counter({
      name: 'plant_store_connections_refused_total',
      help: 'Connections answered 503 at once because the descriptor budget was spent',
      registers,
    });
  }

  answered(answer: AnsweredRequest): void {
    this.requests
      ?.labels(
        answer.method ?? '_OTHER',
        answer.route,
        String(answer.status),
        answer.error === undefined ? '' : String(answer.error),
      )
      .observe((answer.durationMs ?? 0) / 1000);
  }

  created(outcome: 'created' | 'replayed' | 'conflict'): void {
    this.creates?.labels(outcome).inc();
  }

  committed(batchSize: number, seconds: number): void {
    this.batchSize?.observe(batchSize);
    this.commitDuration?.observe(seconds);
  }

  storeAvailable(up: boolean): void {
    this.storeUp?.set(up ? 1 : 0);
  }

  tokenLookedUp(result: 'valid' | 'invalid' | 'unavailable'): void {
    this.tokenLookups?.labels(result).inc();
  }

  rateLimitRefused(): void {
    this.rateLimited?.inc();
  }

  rateLimitStoreFailed(): void {
    this.rateLimitStoreErrors?.inc();
  }

  connectionRefused(): void {
    this.connectionsRefused?.inc();
  }
}
