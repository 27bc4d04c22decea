import type { IncomingHttpHeaders } from 'node:http';
import {
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

/**
 * OpenTelemetry spans, through the API package, off by default. `startTracing` (`tracing-sdk.ts`,
 * loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set) registers the SDK and turns them on, once,
 * before the application is built. Callers test `tracing.on` before calling in here: with tracing
 * off, a request runs nothing of this file.
 */
export const tracing = { on: false };
const tracer = trace.getTracer('plant-store');

export function enableTracing(): void {
  tracing.on = true;
}

/**
 * The span of one request on the public port. A caller's W3C `traceparent` (and `tracestate`)
 * make it the child of the caller's span, so the caller's trace goes on through the service (the
 * SDK's propagator, W3C Trace Context, reads them).
 */
export function startRequestSpan(method: string | undefined, headers: IncomingHttpHeaders): Span {
  return tracer.startSpan(
    method ?? 'HTTP',
    { kind: SpanKind.SERVER, attributes: method === undefined ? {} : { 'http.request.method': method } },
    propagation.extract(ROOT_CONTEXT, headers),
  );
}

/** Records `failure` as an exception event on the current span (a failure the service answers 5xx). */
export function recordFailure(failure: unknown): void {
  if (!tracing.on) return;
  trace.getActiveSpan()?.recordException(failure instanceof Error ? failure : String(failure));
}

/** Runs `next` (the rest of the request's handling) with `span` as the current span. */
export function withSpan<T>(span: Span, next: () => T): T {
  return context.with(trace.setSpan(context.active(), span), next);
}

/** Ends a request span with what was answered, named by its route as the conventions ask. */
export function endRequestSpan(
  span: Span,
  answer: { method: string | undefined; route: string; status: number; error: number | undefined },
): void {
  span.updateName(`${answer.method ?? 'HTTP'} ${answer.route}`);
  span.setAttributes({
    'http.route': answer.route,
    'http.response.status_code': answer.status,
    ...(answer.error === undefined ? {} : { 'plant_store.error_code': answer.error }),
  });
  // Only the server's own failures are span errors; a client's mistake is not (the conventions).
  if (answer.error !== undefined && answer.error >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** `work` inside a span named `name`, a child of the current one. */
export function traced<T>(name: string, work: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, (span) => endAfter(span, work));
}

/** `work`, then `span` ended, marked as an error if `work` failed. */
async function endAfter<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

/** The current span's context, to link to later (a create's, from its batch's commit). */
export function currentSpanContext(): SpanContext | undefined {
  return trace.getActiveSpan()?.spanContext();
}

/**
 * `work` inside one span for a whole batch (a store commit), linked to the span of each item in
 * it (`currentSpanContext()` when it was enqueued): a commit serves many requests, so it is the
 * child of none.
 */
export function tracedBatch<T>(
  name: string,
  items: readonly { span: SpanContext | undefined }[],
  work: () => Promise<T>,
): Promise<T> {
  const links: Link[] = items.flatMap(({ span }) => (span === undefined ? [] : [{ context: span }]));
  const span = tracer.startSpan(name, { links, root: true, attributes: { 'plant_store.batch_size': items.length } });
  return context.with(trace.setSpan(context.active(), span), () => endAfter(span, work));
}
