/**
 * How many bytes a record takes in a Kafka record batch, so produce requests can be sized by bytes
 * and a record the topic cannot take is refused before it is sent.
 * Spec: Kafka protocol "Record Batch" (message format v2): a batch header of 61 bytes; per record
 * a varint length, attributes, varint timestamp and offset deltas, varint-prefixed key and value,
 * a varint header count and varint-prefixed header names and values. The topic's
 * `max.message.bytes` bounds one batch (one partition's records in one produce request).
 * The estimate is an upper bound (every varint counted at its 5-byte maximum).
 */
import { utf8Length } from '../../core/utf8.js';
import type { OutboundRecord } from '../../transport/port.js';

/** Bytes of a v2 record batch's header. */
export const BATCH_HEADER_BYTES = 61;
const VARINT_MAX = 5;
/** length, attributes, timestamp delta, offset delta, key length, value length, header count. */
const RECORD_FIXED_BYTES = 7 * VARINT_MAX;

/** Upper bound of the bytes `record` adds to a record batch (UTF-8 header names counted as bytes). */
export function recordBatchBytes(record: OutboundRecord): number {
  let n = RECORD_FIXED_BYTES + (record.key?.byteLength ?? 0) + (record.value?.byteLength ?? 0);
  for (const [name, value] of record.headers) n += 2 * VARINT_MAX + utf8Length(name) + value.byteLength;
  return n;
}
