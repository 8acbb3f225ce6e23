/**
 * Outbox row ⇄ Kafka record. The row holds the record exactly as the codec built it (key, ordered
 * headers, Confluent-framed value), so the relay never re-encodes. Pure: no I/O.
 */
import type { Attributes } from '../../envelope/types.js';
import type { OutboundRecord, RecordHeader } from '../../transport/port.js';

/** Column values of one row to insert (in {@link insertSql} parameter order, without the channel). */
export interface OutboxRowValues {
  readonly topic: string;
  readonly partitionKey: string;
  readonly recordKey: Buffer | null;
  readonly headerNames: readonly string[];
  readonly headerValues: readonly Buffer[];
  readonly value: Buffer | null;
  /** Record timestamp, epoch ms. */
  readonly timestampMs: number | null;
  readonly eventId: string;
  readonly eventSource: string;
  readonly eventType: string;
}

/** A claimed row as `pg` returns it (bytea → Buffer, bytea[] → Buffer[], bigint as text). */
export interface ClaimedRow {
  readonly id: string;
  readonly topic: string;
  readonly partition_key: string;
  readonly record_key: Buffer | null;
  readonly header_names: string[];
  readonly header_values: Buffer[];
  readonly value: Buffer | null;
  readonly timestamp_ms: string | null;
  readonly event_id: string;
}

const toBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** The columns of a record built by the codec for an envelope with these attributes. */
export function rowValues(topic: string, attributes: Attributes, record: OutboundRecord): OutboxRowValues {
  const pk = attributes.partitionkey;
  return {
    topic,
    partitionKey: typeof pk === 'string' ? pk : '',
    recordKey: record.key === null ? null : toBuffer(record.key),
    headerNames: record.headers.map(([name]) => name),
    headerValues: record.headers.map(([, value]) => toBuffer(value)),
    value: record.value === null ? null : toBuffer(record.value),
    timestampMs: record.timestampMs ?? null,
    eventId: attributes.id,
    eventSource: attributes.source,
    eventType: attributes.type,
  };
}

/** Insert parameters $1…$10 of {@link OutboxRowValues}. */
export function rowParams(v: OutboxRowValues): unknown[] {
  return [v.topic, v.partitionKey, v.recordKey, v.headerNames, v.headerValues, v.value, v.timestampMs, v.eventId, v.eventSource, v.eventType];
}

/** The record to produce for a claimed row (no explicit partition: the key decides, as for direct publishes). */
export function recordOfRow(row: ClaimedRow): OutboundRecord {
  const headers: RecordHeader[] = row.header_names.map((name, i) => [name, row.header_values[i] ?? Buffer.alloc(0)] as const);
  return { key: row.record_key, value: row.value, headers, ...(row.timestamp_ms === null ? {} : { timestampMs: Number(row.timestamp_ms) }) };
}
