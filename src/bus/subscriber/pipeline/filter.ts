/**
 * Stage 3: which events a subscription takes. By kind (eventId), decided from the `ce_type` header
 * before the data is decoded where the record allows it (binary mode), and again on the decoded
 * event (structured mode); then by the subscription's attribute filters (CloudEvents Subscriptions
 * API dialects, ./dialects.ts) on the decoded event. Records of other kinds sharing the topics,
 * and events the filters refuse, are skipped (committed, never handed to the handler).
 * The attribute filters can be replaced while the subscription runs (`withFilters`): the next
 * record is judged by the new ones.
 * Spec: bus spec M3 (routing by eventId); DESIGN "Delivery"; CloudEvents Subscriptions API §3.2.4.
 */
import type { Envelope } from '../../../envelope/types.js';
import { compileFilters } from './dialects.js';
import type { AttributePredicate, FilterExpression } from './dialects.js';

/** A filter over decoded events; `peek` decides early from the type alone (undefined: not known yet). */
export interface EventFilter {
  readonly eventIds: ReadonlySet<string>;
  /** false: skip without decoding; true or undefined: decode and ask `accepts`. */
  peek(type: string | undefined): boolean;
  accepts(event: Envelope): boolean;
}

export function kindFilter(eventIds: ReadonlySet<string>): EventFilter {
  return {
    eventIds,
    peek: (type) => type === undefined || eventIds.has(type),
    accepts: (event) => eventIds.has(event.attributes.type),
  };
}

/** A kind filter plus attribute filters that can be swapped while records flow. */
export interface SubscriptionFilter extends EventFilter {
  /** Replaces the attribute filters (already validated with `filterProblems`). */
  setFilters(filters: readonly FilterExpression[]): void;
}

/** {@link kindFilter} followed by the attribute filters (all must hold; none = every event of the kinds). */
export function subscriptionFilter(eventIds: ReadonlySet<string>, filters: readonly FilterExpression[] = []): SubscriptionFilter {
  const kinds = kindFilter(eventIds);
  let matches: AttributePredicate = compileFilters(filters);
  return {
    eventIds,
    peek: (type) => kinds.peek(type),
    accepts: (event) => kinds.accepts(event) && matches(event.attributes),
    setFilters(next) {
      matches = compileFilters(next);
    },
  };
}
