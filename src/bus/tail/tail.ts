/**
 * A live, read-only view of events of some kinds: a group-less read of their topics, each record
 * bounded, decoded and validated exactly as a subscription would (header bounds, registry, reader
 * schema, envelope rules). A record a subscription would dead-letter is reported as invalid with
 * its reason, never dropped silently. No consumer group is left behind and nothing is committed.
 * Used by `ce-gateway tail` and the operator console's live tail.
 * Spec: issue 7 (tail decodes like a subscription; read-only); issue 16 (console live tail).
 */
import type { EventCodec } from '../../codec/event/index.js';
import type { Attributes } from '../../envelope/index.js';
import { DEFAULT_ENVELOPE_LIMITS } from '../../envelope/index.js';
import type { EnvelopeLimits } from '../../envelope/index.js';
import type { Read, ReadStart, Transport, TransportRecord } from '../../transport/port.js';
import { headerBoundsProblem } from '../subscriber/pipeline/bounds.js';
import { decodeRecord, peekHeaders, peekType } from '../subscriber/pipeline/decode.js';

/** Where a record is: topic, partition, offset (a decimal string: offsets are 64-bit). */
export interface RecordAt {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/** One tailed record: a valid event of the kinds (attributes and natural-JSON data), or why it is invalid. */
export type TailItem =
  | (RecordAt & { readonly valid: true; readonly attributes: Attributes; readonly data: unknown })
  | (RecordAt & { readonly valid: false; readonly reason: string });

export interface TailOptions {
  /** The kinds to show, by eventId; records of other kinds on the same topics are skipped. */
  readonly eventIds: ReadonlySet<string>;
  /** The kinds' topics. */
  readonly topics: readonly string[];
  /** Where to start; `latest` follows only what arrives from now on. */
  readonly from: ReadStart;
  readonly limits?: EnvelopeLimits;
}

const at = (r: TransportRecord): RecordAt => ({ topic: r.topic, partition: r.partition, offset: r.offset.toString() });

/**
 * Starts the tail; `onItem` is called once per record of the kinds, in offset order per partition.
 * Errors: the transport's (CEG_BROKER_UNAVAILABLE, retriable; CEG_INVALID_NAME for a missing topic);
 *   `onItem` rejecting ends the read and rejects its `done`.
 */
export function startTail(transport: Transport, codec: EventCodec, o: TailOptions, onItem: (item: TailItem) => void | Promise<void>): Promise<Read> {
  const limits = o.limits ?? DEFAULT_ENVELOPE_LIMITS;
  return transport.read({ topics: o.topics, from: o.from }, async (r) => {
    const tooBig = headerBoundsProblem(r, limits);
    if (tooBig !== undefined) return onItem({ ...at(r), valid: false, reason: tooBig });
    const headers = peekHeaders(r);
    const type = peekType(headers);
    if (type !== undefined && !o.eventIds.has(type)) return;
    const d = await decodeRecord(codec, r, headers);
    if (!d.ok) return onItem({ ...at(r), valid: false, reason: d.reason });
    if (!o.eventIds.has(d.event.attributes.type)) return;
    const data = d.event.data?.kind === 'json' ? d.event.data.value : null;
    return onItem({ ...at(r), valid: true, attributes: d.event.attributes, data });
  });
}
