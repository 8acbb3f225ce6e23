/**
 * What a failure is made of: the error, its `cause` chain and the members of aggregate errors.
 * Kafka clients wrap the failure that decides what to do (a refused SASL login, a protocol error
 * code, a failed TLS certificate check) in retry aggregates (@platformatic/kafka's
 * `MultipleErrors`, `AggregateError`), network errors and kafkajs's retry wrappers
 * (`KafkaJSNumberOfRetriesExceeded`, `KafkaJSNonRetriableError`: the wrapped error is their
 * `cause`); whoever classifies a failure looks through all of it. One walker for every such check.
 */

/** The fields the classifiers read; everything else of an error is left alone. */
export interface ErrorLink {
  readonly name?: unknown;
  readonly code?: unknown;
  /** kafkajs: the Kafka protocol error name (e.g. `UNKNOWN_TOPIC_OR_PARTITION`). */
  readonly type?: unknown;
  /** @platformatic/kafka: the Kafka protocol error name. */
  readonly apiId?: unknown;
  readonly message?: unknown;
  readonly cause?: unknown;
  /** Aggregate errors' members. */
  readonly errors?: unknown;
}

/** How many errors {@link errorTree} looks at, at most: a retried call nests every attempt's error. */
export const ERROR_TREE_MAX = 100;

/**
 * `err`, then its causes and aggregate members, breadth first (the outermost error first, so a
 * wrapper's own verdict is met before what it wraps), each object once (a cycle ends), at most
 * `max` errors. Non-objects (a thrown string) are left out. Never throws.
 */
export function errorTree<T extends ErrorLink = ErrorLink>(err: unknown, max: number = ERROR_TREE_MAX): T[] {
  const out: T[] = [];
  const seen = new Set<object>();
  const queue: unknown[] = [err];
  for (let i = 0; i < queue.length && out.length < max; i++) {
    const e = queue[i];
    if (typeof e !== 'object' || e === null || seen.has(e)) continue;
    seen.add(e);
    const link = e as T;
    out.push(link);
    if (link.cause !== undefined) queue.push(link.cause);
    if (Array.isArray(link.errors)) for (const inner of link.errors as unknown[]) queue.push(inner);
  }
  return out;
}
