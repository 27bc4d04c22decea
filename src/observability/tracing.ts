import type { IncomingMessage } from 'node:http';
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

const tracer = trace.getTracer('plant-store');

/** The span of one request: a caller's W3C `traceparent` makes it the child of the caller's span. */
export function startRequestSpan(request: IncomingMessage): Span {
  const method = request.method;
  return tracer.startSpan(
    method ?? 'HTTP',
    { kind: SpanKind.SERVER, attributes: method === undefined ? {} : { 'http.request.method': method } },
    propagation.extract(ROOT_CONTEXT, request.headers),
  );
}

/** Records `failure` as an exception event on the current span (a failure the service answers 5xx). */
export function recordFailure(failure: unknown): void {
  trace.getActiveSpan()?.recordException(failure instanceof Error ? failure : String(failure));
}

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

export function traced<T>(name: string, work: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, (span) => endAfter(span, work));
}

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

export function currentSpanContext(): SpanContext | undefined {
  return trace.getActiveSpan()?.spanContext();
}

/** A commit serves many requests: its span is linked to each, the child of none. */
export function tracedBatch<T>(
  name: string,
  items: readonly { span: SpanContext | undefined }[],
  work: () => Promise<T>,
): Promise<T> {
  const links: Link[] = items.flatMap(({ span }) => (span === undefined ? [] : [{ context: span }]));
  const span = tracer.startSpan(name, { links, root: true, attributes: { 'plant_store.batch_size': items.length } });
  return context.with(trace.setSpan(context.active(), span), () => endAfter(span, work));
}
