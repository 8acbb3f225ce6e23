import type { IHeaders } from 'kafkajs';
import type { RecordHeader } from '../port.js';

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
  for (const [name, raw] of Object.entries(headers)) {
    const list: readonly HeaderValue[] = Array.isArray(raw) ? raw : [raw];
    for (const v of list) out.push([name, toBytes(v)]);
  }
  return out;
}

/** A Buffer as a plain Uint8Array view (no copy); strings as UTF-8; null/undefined as empty bytes. */
export function toBytes(v: HeaderValue): Uint8Array {
  if (v === null || v === undefined) return new Uint8Array(0);
  if (typeof v === 'string') {
    const b = Buffer.from(v, 'utf8');
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}
