/**
 * The one place where an outbound event is completed from the model, whoever sends it — HTTP
 * ingress (a partner's event), the bus publisher and the transactional outbox (our own events):
 * the gateway attributes are filled the same way, the kind's size bound and the attribute limits
 * are checked the same way, and the record is built the same way.
 * Spec: DESIGN "The envelope (bus spec M1–M6)" (who fills what), M4 (schemaversion, dataschema),
 * M6 (size bound per kind); CloudEvents Kafka binding 1.0.2 §3.1–3.2 (the record).
 */
import { randomUUID } from 'node:crypto';
import { GatewayError } from '../../core/errors.js';
import type { Attributes, EnvelopeLimits } from '../../envelope/index.js';
import { DEFAULT_ENVELOPE_LIMITS, checkEnvelopeLimits, limitBreachError } from '../../envelope/index.js';
import { attributeBytesOf } from '../kafka/index.js';
import type { OutboundRecord } from '../../transport/port.js';
import { AVRO_CONTENT_TYPE } from './event-codec.js';
import type { EventCodec, KindBinding, SchemaVersion } from './event-codec.js';

/** Bytes of the Confluent frame header before the Avro body (magic byte + schema id). */
const FRAME_HEADER_BYTES = 5;

/** What completing an event needs besides the attributes the sender set. */
export interface Completion {
  readonly binding: KindBinding;
  /** The schema version the data was encoded with (default: the kind's latest, `binding`). */
  readonly version?: SchemaVersion;
  /** Confluent-framed Avro data, or null for an event without data (a tombstone). */
  readonly value: Uint8Array | null;
  /** The partition key computed from the data; undefined keeps the sender's (tombstones). */
  readonly partitionkey: string | undefined;
  /** Public base of `dataschema`; the schema id is appended. */
  readonly dataschemaBase: string;
  /** Bounds on the attributes of the event as written; default {@link DEFAULT_ENVELOPE_LIMITS}. */
  readonly limits?: EnvelopeLimits;
  /**
   * A header the caller adds to the record after this check when it has none of that name (HTTP
   * ingress with tracing on: `ce_traceparent`, {@link TRACEPARENT_RESERVE}), counted in the limits
   * and the size bound as if present: otherwise an event just within them was accepted and then
   * dead-lettered by every subscriber as poison (break report 2026-12-06).
   */
  readonly reserve?: readonly [string, Uint8Array];
}

/**
 * `ce_traceparent` at its W3C Trace Context length (version 00: 55 characters), for
 * {@link Completion.reserve}: what the ingress's producer span writes into a record without one.
 * Spec: W3C Trace Context §3.2.2 (traceparent `00-<32 hex>-<16 hex>-<2 hex>`).
 */
export const TRACEPARENT_RESERVE: readonly [string, Uint8Array] = Object.freeze(['ce_traceparent', new Uint8Array(55)] as const);

/** `headers` with `reserve` added when no header has its name (what will be written), else as they are. */
export function withReserved<H extends readonly [string, Uint8Array]>(headers: readonly H[], reserve: readonly [string, Uint8Array] | undefined): readonly (H | readonly [string, Uint8Array])[] {
  if (reserve === undefined || headers.some(([n]) => n === reserve[0])) return headers;
  return [...headers, reserve];
}

/** A completed event: its attributes, its topic and its record. */
export interface OutboundEvent {
  readonly attributes: Attributes;
  readonly topic: string;
  readonly record: OutboundRecord;
  /** Avro data bytes + attribute bytes: what the kind's size bound is checked against. */
  readonly eventBytes: number;
  /**
   * The record's headers as they will be written: with {@link Completion.reserve} added when the
   * record had none of its name (what the limits counted), else `record.headers` itself.
   */
  readonly writtenHeaders: OutboundRecord['headers'];
}

/**
 * The `dataschema` text per schema version and base, built once: the same string object each time,
 * so the record's header cache finds it without hashing a new string per event (issue 14).
 */
const dataschemaTexts = new WeakMap<SchemaVersion, { readonly base: string; readonly text: string }>();

function dataschemaOf(v: SchemaVersion, base: string): string {
  const known = dataschemaTexts.get(v);
  if (known !== undefined && known.base === base) return known.text;
  const text = `${base}${v.schema.id}`;
  dataschemaTexts.set(v, { base, text });
  return text;
}

/**
 * The attributes the gateway fills, over the sender's: `eventname`, `eventclass`, `schemaversion`
 * and `dataschema` from the kind and schema version (a sender's value is overwritten),
 * `partitionkey` when computed, `datacontenttype` (`application/avro` with data, none without),
 * and a new `correlationid` when none came. Pure apart from the fresh correlation id.
 */
export function completeAttributes(a: Attributes, c: Completion): Attributes {
  const v = c.version ?? c.binding;
  const kind = c.binding.kind;
  return {
    ...a,
    datacontenttype: c.value === null ? undefined : AVRO_CONTENT_TYPE,
    correlationid: typeof a.correlationid === 'string' && a.correlationid !== '' ? a.correlationid : randomUUID(),
    eventname: kind.name,
    eventclass: kind.eventClass,
    schemaversion: v.schema.version,
    dataschema: dataschemaOf(v, c.dataschemaBase),
    ...(c.partitionkey === undefined ? {} : { partitionkey: c.partitionkey }),
  };
}

/**
 * Completes the event ({@link completeAttributes}), checks it and builds its record.
 * Checks: the kind's size bound (`maxDataBytes`, bus spec M6) holds for the Avro data plus the
 * attributes (UTF-8 names and canonical values), since attributes travel with every record too;
 * and the record's headers stay within `limits` counted as a consumer counts them (every header,
 * `ce_<name>` + value, with `reserve` when the caller adds it later), so what the gateway writes a
 * subscriber of the same limits accepts.
 * Errors (retriable: false): CEG_PAYLOAD_TOO_LARGE naming the bound (`details.field` `/data`, or
 *   `attributes` when they are the larger part,
 *   `maxDataBytes`, `dataBytes`, `attributeBytes`); CEG_TOO_MANY_ATTRIBUTES /
 *   CEG_ATTRIBUTES_TOO_LARGE (`details.limit`, `max`, `actual`).
 */
export function completeOutbound(codec: EventCodec, a: Attributes, c: Completion): OutboundEvent {
  const kind = c.binding.kind;
  const attributes = completeAttributes(a, c);
  const record = codec.toRecord(attributes, c.value);
  const headers = withReserved(record.headers, c.reserve);
  const breach = checkEnvelopeLimits(headers, c.limits ?? DEFAULT_ENVELOPE_LIMITS, headers.length);
  if (breach !== undefined) throw limitBreachError(breach, { field: 'attributes' });
  // Counted on the headers just encoded: the same bytes as the attributes' names and canonical values.
  const attributeBytes = attributeBytesOf(headers);
  const dataBytes = c.value === null ? 0 : c.value.length - FRAME_HEADER_BYTES;
  const eventBytes = dataBytes + attributeBytes;
  if (eventBytes > kind.maxDataBytes) {
    throw new GatewayError(
      'CEG_PAYLOAD_TOO_LARGE',
      `the event is larger than the ${kind.eventClass} bound of ${kind.name}: ${dataBytes} bytes of data (Avro) + ${attributeBytes} bytes of attributes = ${eventBytes} > ${kind.maxDataBytes} bytes`,
      // Named after the larger part: what there is to shrink.
      { retriable: false, details: { field: dataBytes >= attributeBytes ? '/data' : 'attributes', limit: 'maxDataBytes', max: kind.maxDataBytes, actual: eventBytes, dataBytes, attributeBytes } },
    );
  }
  return { attributes, topic: kind.topic.name, record, eventBytes, writtenHeaders: headers };
}
