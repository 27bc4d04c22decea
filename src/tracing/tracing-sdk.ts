import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace';
import { enableTracing } from './tracing';

/**
 * OpenTelemetry's Node SDK with an OTLP/HTTP span exporter to `endpoint` (OTEL_EXPORTER_OTLP_ENDPOINT;
 * the spans go to its `/v1/traces`), batched. No automatic instrumentation: the service makes its
 * own spans (the request, the token look-up, the create, the store commit; see `tracing.ts`),
 * which are the ones an operator asks about. Resolves with the SDK's shutdown, which exports what
 * is still batched; a stopping process calls it before it exits.
 */
export function startTracing(endpoint: string, serviceName: string): () => Promise<void> {
  const sdk = new NodeSDK({
    serviceName,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }),
      }),
    ],
    instrumentations: [],
  });
  sdk.start();
  enableTracing();
  return () => sdk.shutdown();
}
