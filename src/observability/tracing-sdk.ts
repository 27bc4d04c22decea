import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace';
import { enableTracing } from './tracing';

/**
 * OpenTelemetry's Node SDK with an OTLP/HTTP span exporter to `endpoint` (OTEL_EXPORTER_OTLP_ENDPOINT;
 * the spans go to its `/v1/traces`), batched. The service makes its own spans (the request, the
 * token's read from the store, the store commit; see `tracing.ts`), which are the ones an operator
 * asks about; OpenTelemetry's maintained `pg` instrumentation adds each PostgreSQL query as a
 * child of the span it runs in (none outside one). It patches `pg` as it loads, so this runs
 * before anything loads the application (`main.ts`). Resolves with the SDK's shutdown, which
 * exports what is still batched; a stopping process calls it before it exits.
 */
export function startTracing(endpoint: string, serviceName: string): () => Promise<void> {
  const sdk = new NodeSDK({
    serviceName,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }),
      }),
    ],
    instrumentations: [new PgInstrumentation({ requireParentSpan: true })],
  });
  sdk.start();
  enableTracing();
  return () => sdk.shutdown();
}
