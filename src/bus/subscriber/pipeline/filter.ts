/**
 * Stage 3: which events a subscription takes. By kind (eventId), decided from the `ce_type` header
 * before the data is decoded where the record allows it (binary mode), and again on the decoded
 * event (structured mode). Records of other kinds sharing the topics are skipped.
 * Spec: bus spec M3 (routing by eventId); DESIGN "Delivery".
 */
import type { Envelope } from '../../../envelope/types.js';

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
