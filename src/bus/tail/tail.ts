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
import { DEAD_LETTER_HEADERS } from '../subscriber/failure-headers.js';
import { headerBoundsProblem } from '../subscriber/pipeline/bounds.js';
import { decodeRecord, peekHeaders, peekType } from '../subscriber/pipeline/decode.js';

/** Where a record is: topic, partition, offset (a decimal string: offsets are 64-bit). */
export interface RecordAt {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/** What a dead letter's headers say (issue 10: `tail` can read a dead-letter topic): `dlq_reason`, `dlq_attempts`, `dlq_last_status`. */
export interface DeadLetterNote {
  readonly reason: string;
  readonly attempts?: string;
  readonly lastStatus?: string;
}

/**
 * One tailed record: a valid event of the kinds (attributes and natural-JSON data), or why it is
 * invalid; `deadLetter` when the record is a dead letter (read from a `<subscription>.dlq` topic).
 */
export type TailItem =
  | (RecordAt & { readonly valid: true; readonly attributes: Attributes; readonly data: unknown; readonly deadLetter?: DeadLetterNote })
  | (RecordAt & { readonly valid: false; readonly reason: string; readonly deadLetter?: DeadLetterNote });

export interface TailOptions {
  /** The kinds to show, by eventId; records of other kinds on the same topics are skipped. */
  readonly eventIds: ReadonlySet<string>;
  /** The kinds' topics. */
  readonly topics: readonly string[];
  /** Where to start; `latest` follows only what arrives from now on. */
  readonly from: ReadStart;
  readonly limits?: EnvelopeLimits;
}

// ignoreBOM: a leading U+FEFF in a header value or key is part of it (CloudEvents attributes may start with one).
const dec = new TextDecoder('utf-8', { ignoreBOM: true });

/** The record's position, and its dead-letter note when it carries `dlq_reason`. */
function at(r: TransportRecord): RecordAt & { deadLetter?: DeadLetterNote } {
  const where = { topic: r.topic, partition: r.partition, offset: r.offset.toString() };
  const get = (name: string): string | undefined => {
    const h = r.headers.find(([n]) => n === name);
    return h === undefined ? undefined : dec.decode(h[1]);
  };
  const reason = get(DEAD_LETTER_HEADERS.reason);
  if (reason === undefined) return where;
  const attempts = get(DEAD_LETTER_HEADERS.attempts);
  const lastStatus = get(DEAD_LETTER_HEADERS.lastStatus);
  return { ...where, deadLetter: { reason, ...(attempts === undefined ? {} : { attempts }), ...(lastStatus === undefined ? {} : { lastStatus }) } };
}

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
