export { createLogger, silentLogger, redactPaths } from './logger.js';
export type { Logger } from './logger.js';
export { LogThrottle } from '../core/log-throttle.js';
export { GatewayMetrics, routeOf, methodOf, HTTP_ROUTES, LATENCY_BUCKETS_S } from './metrics.js';
export type { HttpRoute, IngressOutcome, MetricsOptions, PartitionLag as MetricsPartitionLag, ScrapeSource, SubscriptionFigures } from './metrics.js';
export { NO_TRACING, startTracing, traceIdOf, validTraceparent } from './tracing.js';
export type { ActiveSpan, SpanAttributes, SpanKindName, Tracing, TracingOptions } from './tracing.js';
