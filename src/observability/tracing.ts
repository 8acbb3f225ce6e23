/**
 * Tracing (issue 15 "Tracing"): OpenTelemetry spans named and attributed after the messaging
 * semantic conventions, exported by OTLP over HTTP when an endpoint is configured, and W3C
 * `traceparent` strings as the only thing the rest of the code handles — no OpenTelemetry
 * context object crosses a module boundary.
 * Off by default and free when off: {@link NO_TRACING} does nothing, and the OpenTelemetry SDK is
 * imported (dynamically) only by {@link startTracing}. No global provider is registered, so a
 * library user's own OpenTelemetry set-up is left alone.
 * Spec: W3C Trace Context §3.2 (traceparent); OpenTelemetry semantic conventions for messaging
 * (messaging.system, messaging.destination.name, messaging.operation.type,
 * messaging.consumer.group.name, messaging.kafka.*) and HTTP (http.request.method,
 * http.response.status_code, url.full); DESIGN "Conventions users already know".
 */
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';

export type SpanKindName = 'server' | 'client' | 'producer' | 'consumer' | 'internal';
export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

/** A span in progress. */
export interface ActiveSpan {
  /** The span's own context as a W3C traceparent, to write into the message or request it covers. */
  readonly traceparent: string;
  /** Adds attributes learnt later (a status code, a partition). */
  set(attributes: SpanAttributes): void;
  /** Ends it; with `error`, its status is ERROR with the error's message. Idempotent. */
  end(error?: unknown): void;
}

export interface Tracing {
  readonly enabled: boolean;
  /**
   * Starts a span whose parent is `parent` (a W3C traceparent; a new trace when absent or
   * malformed). Undefined when tracing is off: callers skip all work then.
   */
  start(name: string, kind: SpanKindName, parent: string | undefined, attributes?: SpanAttributes): ActiveSpan | undefined;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** Tracing off: nothing is created, nothing is exported. */
export const NO_TRACING: Tracing = Object.freeze({
  enabled: false,
  start: () => undefined,
  shutdown: () => Promise.resolve(),
});

// version-traceid-parentid-flags, then (versions after 00 only) more fields after a '-'.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[\x21-\x7e]*)?$/;
/** Longest traceparent looked at, characters (version 00 has 55). */
const MAX_TRACEPARENT = 512;

/**
 * The W3C traceparent to continue, as version 00 (lowercase hex), else undefined: an outside value
 * is checked before use. A higher version is read as the spec asks — its first four fields, any
 * later ones after a `-` ignored — and continued as version 00; version `ff`, an all-zero trace
 * or parent id, and a version 00 value with anything after its flags are refused.
 * Spec: W3C Trace Context Level 1 §3.2.2 (fields), §3.2.4 / §4.3 (versioning of traceparent).
 */
export function validTraceparent(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length > MAX_TRACEPARENT) return undefined;
  const m = TRACEPARENT.exec(v);
  if (m === null) return undefined;
  const [, version, traceId, parentId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(parentId)) return undefined;
  return `00-${traceId}-${parentId}-${flags}`;
}

/** The trace id (32 hex digits) of a traceparent. */
export function traceIdOf(traceparent: string): string {
  return traceparent.slice(3, 35);
}

export interface TracingOptions {
  /** `service.name` of the spans. */
  readonly serviceName: string;
  /** `service.instance.id`. */
  readonly instance: string;
  /** OTLP/HTTP traces URL (e.g. `http://collector:4318/v1/traces`). */
  readonly endpoint?: string;
  /** An exporter of the caller's (tests: an in-memory one); spans are exported as they end. */
  readonly exporter?: SpanExporter;
}

/**
 * Starts tracing with the OpenTelemetry SDK: spans exported in batches by OTLP/HTTP to
 * `endpoint`, or one by one to `exporter`. Neither given: {@link NO_TRACING}.
 */
export async function startTracing(o: TracingOptions): Promise<Tracing> {
  if (o.endpoint === undefined && o.exporter === undefined) return NO_TRACING;
  const [api, core, sdk, resources] = await Promise.all([import('@opentelemetry/api'), import('@opentelemetry/core'), import('@opentelemetry/sdk-trace-base'), import('@opentelemetry/resources')]);
  let exporter = o.exporter;
  if (exporter === undefined) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    exporter = new OTLPTraceExporter({ url: o.endpoint });
  }
  const processor = o.exporter !== undefined ? new sdk.SimpleSpanProcessor(exporter) : new sdk.BatchSpanProcessor(exporter);
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': o.serviceName, 'service.instance.id': o.instance }),
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('ce-gateway');
  const propagator = new core.W3CTraceContextPropagator();
  const kinds: Record<SpanKindName, number> = { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT, producer: api.SpanKind.PRODUCER, consumer: api.SpanKind.CONSUMER, internal: api.SpanKind.INTERNAL };
  return {
    enabled: true,
    start(name, kind, parent, attributes = {}) {
      const p = validTraceparent(parent);
      const parentCtx = p === undefined ? api.ROOT_CONTEXT : propagator.extract(api.ROOT_CONTEXT, { traceparent: p }, api.defaultTextMapGetter);
      const span = tracer.startSpan(name, { kind: kinds[kind], attributes: { ...attributes } }, parentCtx);
      const carrier: Record<string, string> = {};
      propagator.inject(api.trace.setSpan(api.ROOT_CONTEXT, span), carrier, api.defaultTextMapSetter);
      let ended = false;
      return {
        traceparent: carrier.traceparent ?? '',
        set: (a) => void span.setAttributes({ ...a }),
        end(error?: unknown) {
          if (ended) return;
          ended = true;
          if (error !== undefined) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : typeof error === 'string' ? error : 'failed' });
          span.end();
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
}
