import type { IHeaders, KafkaMessage } from 'kafkajs';
import type { RecordHeader, TransportRecord } from '../port.js';

type HeaderValue = Buffer | string | null | undefined;

/**
 * Port headers → kafkajs headers. kafkajs takes an object, so repeated names become an array in
 * their original order; distinct names keep their first-occurrence order (a JavaScript object
 * puts integer-like names such as "1" first — avoid those as header names).
 * Values are wrapped as Buffers without copying (Buffers pass through as they are).
 * Limit: interleaved repeats (a, b, a) reach the broker as (a, a, b) — kafkajs encodes per name.
 */
export function toKafkaHeaders(headers: readonly RecordHeader[]): IHeaders {
  const out: Record<string, Buffer | Buffer[]> = {};
  for (const [name, value] of headers) {
    const buf = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    const prev = out[name];
    out[name] = prev === undefined ? buf : Array.isArray(prev) ? [...prev, buf] : [prev, buf];
  }
  return out;
}

/**
 * kafkajs headers → ordered `[name, Uint8Array]` pairs. A value may come back as a Buffer, a
 * string (UTF-8 encoded here), null (a Kafka null header value → empty bytes), or an array of those
 * for a repeated name; every repeat is kept, in order.
 */
export function fromKafkaHeaders(headers: IHeaders | undefined): RecordHeader[] {
  if (headers === undefined) return [];
  const out: RecordHeader[] = [];
  // for…in, not Object.entries: no array of pairs per record (kafkajs builds a plain object).
  for (const name in headers) {
    const raw = headers[name];
    if (Array.isArray(raw)) for (const v of raw as readonly HeaderValue[]) out.push([name, toBytes(v)]);
    else out.push([name, toBytes(raw)]);
  }
  return out;
}

/**
 * A kafkajs message as the port's record: key, value and header values are kafkajs's Buffers over
 * the fetched bytes (a Buffer is a Uint8Array: no copy, and no second view object per value).
 */
export function toRecord(topic: string, partition: number, m: KafkaMessage): TransportRecord {
  return Object.freeze({
    topic,
    partition,
    offset: BigInt(m.offset),
    timestampMs: Number(m.timestamp),
    key: m.key ?? null,
    value: m.value,
    headers: Object.freeze(fromKafkaHeaders(m.headers)),
  });
}

const EMPTY = new Uint8Array(0);

/** A Buffer as it is (a Uint8Array); strings as UTF-8; null/undefined as empty bytes. */
export function toBytes(v: HeaderValue): Uint8Array {
  if (v === null || v === undefined) return EMPTY;
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  return v;
}
