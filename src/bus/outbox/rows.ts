/**
 * Outbox row ⇄ Kafka record. The row holds the record exactly as the codec built it (key, ordered
 * headers, Confluent-framed value), so the relay never re-encodes. Pure: no I/O.
 */
import { GatewayError } from '../../core/errors.js';
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

/**
 * The record to produce for a claimed row (no explicit partition: the key decides, as for direct
 * publishes). The row is checked first, since the table's constraints cannot promise everything
 * (a table created before a constraint existed, a row an operator wrote or edited by hand):
 * `header_names` an array of texts and `header_values` an array of byte strings, one value per
 * name (no NULL element, same length); `record_key` and `value` bytes or NULL; `timestamp_ms` NULL
 * or an integer of epoch ms in 0…2^53−1.
 * Errors: CEG_INVALID_EVENT (retriable: false; `details.rowId`, `details.problem`) naming the first
 *   problem found: such a row can never be produced as it is (the relay holds back its key only).
 * Spec: bus spec P3 (the row holds the record exactly as the codec built it); Kafka protocol
 *   "Record" (header key a string, header value bytes).
 */
export function recordOfRow(row: ClaimedRow): OutboundRecord {
  const problem = rowProblem(row);
  if (problem !== undefined) {
    throw new GatewayError('CEG_INVALID_EVENT', `outbox row ${String(row.id)} (event ${String(row.event_id)}) cannot be made a Kafka record: ${problem}`, {
      retriable: false,
      details: { rowId: String(row.id), problem },
    });
  }
  const headers: RecordHeader[] = row.header_names.map((name, i) => [name, row.header_values[i]!] as const);
  return { key: row.record_key, value: row.value, headers, ...(row.timestamp_ms === null ? {} : { timestampMs: Number(row.timestamp_ms) }) };
}

const isBytes = (v: unknown): v is Buffer => Buffer.isBuffer(v);

/** What makes `row` unfit to be a record, in words, or undefined when it is fit. */
function rowProblem(row: ClaimedRow): string | undefined {
  const names: unknown = row.header_names;
  const values: unknown = row.header_values;
  if (!Array.isArray(names)) return `header_names is ${names === null ? 'NULL' : 'not a one-dimensional text array'}`;
  if (!Array.isArray(values)) return `header_values is ${values === null ? 'NULL' : 'not a one-dimensional bytea array'}`;
  if (names.length !== values.length) return `header_names has ${names.length} elements but header_values ${values.length}: one value per name`;
  for (let i = 0; i < names.length; i++) {
    const n: unknown = names[i];
    if (typeof n !== 'string') return `header_names[${i + 1}] is ${n === null ? 'NULL' : 'not a text'}`;
    const v: unknown = values[i];
    if (!isBytes(v)) return `header_values[${i + 1}] (header ${JSON.stringify(n)}) is ${v === null ? 'NULL' : 'not a byte string'}`;
  }
  if (row.record_key !== null && !isBytes(row.record_key)) return 'record_key is not a byte string';
  if (row.value !== null && !isBytes(row.value)) return 'value is not a byte string';
  if (row.timestamp_ms !== null) {
    const t = Number(row.timestamp_ms);
    if (!(Number.isSafeInteger(t) && t >= 0)) return `timestamp_ms ${String(row.timestamp_ms)} is not epoch ms in 0…2^53−1`;
  }
  return undefined;
}
