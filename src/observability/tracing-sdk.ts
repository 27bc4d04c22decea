import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace';

/** Loaded before the application: the `pg` instrumentation must see `pg` load. Resolves with the SDK's shutdown. */
export function startTracing(exporter: { endpoint: string; serviceName: string }): () => Promise<void> {
  const { endpoint, serviceName } = exporter;
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
  return () => sdk.shutdown();
}
