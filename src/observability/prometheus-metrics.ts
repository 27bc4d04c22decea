import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from '@prometheus-io/client';
import { type AnsweredRequest, type CreateOutcome, Metrics } from './metrics';

/** This build's version and commit (dist/build-info.json, else package.json) and its Node. */
export function buildInfo(): { version: string; commit: string; node: string } {
  const root = join(__dirname, '..', '..');
  const read = (file: string): { version?: string; commit?: string } => {
    try {
      return JSON.parse(readFileSync(join(root, file), 'utf8')) as { version?: string; commit?: string };
    } catch {
      return {};
    }
  };
  const built = read('dist/build-info.json');
  return {
    version: built.version ?? read('package.json').version!,
    commit: built.commit ?? 'unknown',
    node: process.version,
  };
}

function instruments(registry: Registry) {
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  const build = buildInfo();
  new Gauge({
    name: 'plant_store_build_info',
    help: 'Always 1: the version and commit of the build, and the Node.js that runs it, as labels',
    labelNames: ['version', 'commit', 'node'],
    registers,
  })
    .labels(build.version, build.commit, build.node)
    .set(1);
  const storeUp = new Gauge({
    name: 'plant_store_store_up',
    help: '1 while the store answers, 0 during an outage',
    registers,
  });
  storeUp.set(1);
  return {
    storeUp,
    requests: new Histogram({
      name: 'http_server_request_duration_seconds',
      help: 'Duration of HTTP server requests on the public port, by method, route, status and contract error code',
      labelNames: ['http_request_method', 'http_route', 'http_response_status_code', 'error_code'],
      // The OpenTelemetry HTTP conventions' buckets.
      buckets: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
      registers,
    }),
    creates: new Counter({
      name: 'plant_store_creates_total',
      help: 'Creates answered 200 or 409, by outcome: created, replayed (the same plant again) or conflict',
      labelNames: ['outcome'],
      registers,
    }),
    commitDuration: new Histogram({
      name: 'plant_store_commit_duration_seconds',
      help: 'Duration of each store commit (one per batch of creates)',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    batchSize: new Histogram({
      name: 'plant_store_commit_batch_size',
      help: 'Creates written by each store commit',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers,
    }),
    tokenLookups: new Counter({
      name: 'plant_store_token_lookups_total',
      help: 'Bearer tokens looked up in the store, by result: valid, invalid (unknown or revoked) or unavailable',
      labelNames: ['result'],
      registers,
    }),
    rateLimited: new Counter({
      name: 'plant_store_rate_limited_total',
      help: 'Requests refused with code 429 (RATE_LIMIT)',
      registers,
    }),
    rateLimitStoreErrors: new Counter({
      name: 'plant_store_rate_limit_store_errors_total',
      help: 'Requests let through uncounted because the rate limit store (RATE_LIMIT_REDIS_URL) did not answer',
      registers,
    }),
  };
}

/** Counting into a registry of its own, which the metrics listener (METRICS_PORT) serves. */
export class PrometheusMetrics extends Metrics {
  readonly registry = new Registry();
  private readonly meters = instruments(this.registry);

  answered({ method, route, status, error, durationMs = 0 }: AnsweredRequest): void {
    this.meters.requests
      .labels(method ?? '_OTHER', route, String(status), error === undefined ? '' : String(error))
      .observe(durationMs / 1000);
  }

  created(outcome: CreateOutcome): void {
    this.meters.creates.labels(outcome).inc();
  }

  committed(batchSize: number, seconds: number): void {
    this.meters.batchSize.observe(batchSize);
    this.meters.commitDuration.observe(seconds);
  }

  storeAvailable(up: boolean): void {
    this.meters.storeUp.set(up ? 1 : 0);
  }

  tokenLookedUp(result: 'valid' | 'invalid' | 'unavailable'): void {
    this.meters.tokenLookups.labels(result).inc();
  }

  rateLimitRefused(): void {
    this.meters.rateLimited.inc();
  }

  rateLimitStoreFailed(): void {
    this.meters.rateLimitStoreErrors.inc();
  }
}
