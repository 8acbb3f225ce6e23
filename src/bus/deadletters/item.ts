/**
 * One dead letter as the listing shows it: the event's `id` and `source`, why and how often it
 * failed, what the sink answered last (push), where it was first read, when it failed first and
 * last, whether it was redriven, and the event decoded (CloudEvents JSON format).
 * Spec: issue 10 ("each item with the event's id and source, reason, attempts, last status and
 *   excerpt (push), coordinates, first and last failure times, and the event decoded");
 *   DEAD_LETTER_HEADERS (the dead-letter topic's contract).
 */
import type { EventCodec } from '../../codec/event/index.js';
import { declaresJson, toStructuredJson } from '../../codec/json/index.js';
import type { Envelope, JsonValue } from '../../envelope/index.js';
import type { RecordHeader, TransportRecord } from '../../transport/port.js';
import { DEAD_LETTER_HEADERS } from '../subscriber/index.js';
import { decodeRecord } from '../subscriber/pipeline/decode.js';
import type { DeadLetterMark } from './marks.js';

// ignoreBOM: a leading U+FEFF in a header value or key is part of it (CloudEvents attributes may start with one).
const dec = new TextDecoder('utf-8', { ignoreBOM: true });

/** Kafka coordinates; `offset` is decimal text (64-bit offsets do not fit a JSON number safely). */
export interface Coordinates {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

export interface DeadLetterItem {
  /** The CloudEvent `id` (null when the record is not a readable event). */
  readonly id: string | null;
  readonly source: string | null;
  readonly type: string | null;
  /** Why it was dead-lettered (`dlq_reason`). */
  readonly reason: string;
  /** Attempts made (`dlq_attempts`). */
  readonly attempts: number | null;
  /** Push: the sink's last HTTP status (null when it never answered, or not push). */
  readonly lastStatus: number | null;
  /** Push: the start of the sink's last answer, at most 1,024 bytes. */
  readonly excerpt: string | null;
  /** Push: the sink, without query or credentials. */
  readonly sink: string | null;
  /** Where the subscription first read the event (`dlq_source_*`). */
  readonly coordinates: Coordinates | null;
  /** Where the dead letter itself is (the `<subscription>.dlq` record). */
  readonly deadLetter: Coordinates & { readonly time: string };
  /** RFC 3339 UTC. */
  readonly firstFailureTime: string | null;
  readonly lastFailureTime: string | null;
  /** How often the event had been redriven before this dead letter (0: never). */
  readonly redriven: number;
  /** When this dead letter was redriven (it is not redriven again), RFC 3339 UTC; null: not yet. */
  readonly redrivenAt: string | null;
  /** Set when the dead-letter topic refused the full record: the value's size, bytes (the event cannot be decoded or redriven). */
  readonly valueDropped: number | null;
  /** The event in the CloudEvents JSON format (data as JSON); null when it cannot be decoded (see `eventProblem`). */
  readonly event: Record<string, JsonValue> | null;
  readonly eventProblem?: string;
}

/** The first value of each header name, as text. */
export function headerText(headers: readonly RecordHeader[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [n, v] of headers) if (!out.has(n)) out.set(n, dec.decode(v));
  return out;
}

const int = (v: string | undefined): number | null => (v !== undefined && /^\d{1,15}$/.test(v) ? Number(v) : null);

/** The original coordinates named by `dlq_source_*`, or null when they are missing or malformed. */
export function sourceCoordinates(h: ReadonlyMap<string, string>): { readonly topic: string; readonly partition: number; readonly offset: bigint } | null {
  const H = DEAD_LETTER_HEADERS;
  const topic = h.get(H.sourceTopic);
  const partition = int(h.get(H.sourcePartition));
  const offset = h.get(H.sourceOffset);
  if (topic === undefined || partition === null || offset === undefined || !/^\d{1,19}$/.test(offset)) return null;
  return { topic, partition, offset: BigInt(offset) };
}

/** The event as JSON: decoded data is JSON, whatever media type the record had (Avro). */
function eventJson(e: Envelope): Record<string, JsonValue> {
  const d = e.data;
  const ct = e.attributes.datacontenttype;
  const asJson = d?.kind === 'json' && !declaresJson(typeof ct === 'string' ? ct : undefined) && typeof d.value !== 'string';
  return toStructuredJson(asJson ? { attributes: { ...e.attributes, datacontenttype: 'application/json' }, data: d } : e);
}

/** Builds the item of a dead-letter record; decoding goes through the registry (never throws). */
export async function toItem(codec: EventCodec, r: TransportRecord, mark: DeadLetterMark | undefined): Promise<DeadLetterItem> {
  const h = headerText(r.headers);
  const H = DEAD_LETTER_HEADERS;
  const src = sourceCoordinates(h);
  let event: Record<string, JsonValue> | null = null;
  let eventProblem: string | undefined;
  let id = h.get('ce_id') ?? null;
  let source = h.get('ce_source') ?? null;
  let type = h.get('ce_type') ?? null;
  if (r.value === null && h.has(H.valueDropped)) {
    eventProblem = 'the dead-letter topic refused the full record: stored without its value';
  } else {
    const d = await decodeRecord(codec, r);
    if (d.ok) {
      try {
        event = eventJson(d.event);
      } catch (err) {
        eventProblem = err instanceof Error ? err.message : String(err);
      }
      id = d.event.attributes.id;
      source = d.event.attributes.source;
      type = d.event.attributes.type;
    } else {
      eventProblem = d.reason.slice(0, 1000);
    }
  }
  return {
    id,
    source,
    type,
    reason: h.get(H.reason) ?? '',
    attempts: int(h.get(H.attempts)),
    lastStatus: int(h.get(H.lastStatus)),
    excerpt: h.get(H.responseExcerpt) ?? null,
    sink: h.get(H.sink) ?? null,
    coordinates: src === null ? null : { topic: src.topic, partition: src.partition, offset: src.offset.toString() },
    deadLetter: { topic: r.topic, partition: r.partition, offset: r.offset.toString(), time: new Date(r.timestampMs).toISOString() },
    firstFailureTime: h.get(H.firstFailureTime) ?? null,
    lastFailureTime: h.get(H.lastFailureTime) ?? null,
    redriven: int(h.get(H.redriven)) ?? 0,
    redrivenAt: mark?.redrivenAtMs === undefined ? null : new Date(mark.redrivenAtMs).toISOString(),
    valueDropped: int(h.get(H.valueDropped)),
    event,
    ...(eventProblem === undefined ? {} : { eventProblem }),
  };
}
