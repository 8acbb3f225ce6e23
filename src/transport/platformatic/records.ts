/**
 * Conversions between the port's records and @platformatic/kafka's wire shapes, kept apart from
 * the clients so that the hot path (one call per record) is visible in one place.
 */
import type { RecordHeader, TransportRecord } from '../port.js';
import { headerNameAt } from './record-batches.js';

/** Record batches carry this bit in their attributes when they are transaction markers. */
const IS_CONTROL = 1 << 5;

/** A Uint8Array as a Buffer over the same memory (no copy); Buffers pass as they are. */
export const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));
const EMPTY = new Uint8Array(0);

/** Header names encoded once (UTF-8), reused for every record; bounded so odd names cannot grow it. */
const names = new Map<string, Buffer>();
const MAX_CACHED_NAMES = 1024;

function nameBuffer(name: string): Buffer {
  let b = names.get(name);
  if (b === undefined) {
    b = Buffer.from(name, 'utf8');
    if (names.size < MAX_CACHED_NAMES) names.set(name, b);
  }
  return b;
}

/**
 * Port headers → the `Map<Buffer, Buffer>` the library encodes in insertion order. A Map of
 * Buffers, not a plain object: with a plain object and no header serializers the library hangs
 * (DESIGN "Known traps"), and an object cannot hold a name twice. A repeated name gets a fresh
 * Buffer as its key (Map keys compare by identity), so every repeat is kept, in order.
 */
export function toHeaderMap(headers: readonly RecordHeader[]): Map<Buffer, Buffer> {
  const out = new Map<Buffer, Buffer>();
  for (const [name, value] of headers) {
    let key = nameBuffer(name);
    if (out.has(key)) key = Buffer.from(name, 'utf8');
    out.set(key, asBuffer(value));
  }
  return out;
}

/** What a fetch answer holds for one partition (the library's record batch shape). */
export interface FetchedBatch {
  readonly firstOffset: bigint;
  readonly firstTimestamp: bigint;
  readonly attributes: number;
  readonly lastOffsetDelta: number;
  readonly records: readonly {
    readonly offsetDelta: number;
    readonly timestampDelta: bigint;
    readonly key: Buffer | null;
    readonly value: Buffer | null;
    /** Handed over: {@link decodeBatches} turns these pairs into the port's headers in place. */
    readonly headers: [Buffer | string | null, Uint8Array | null][];
  }[];
}

/**
 * The records of fetched batches at or after `from`, in offset order, and the offset to fetch next
 * (after the last batch, transaction markers included). Keys, values and header values are the
 * library's Buffers over the fetched bytes (no copy, no second view object per value: a record has
 * 14 of them); a null header value becomes empty bytes, as in the kafkajs adapter.
 */
export function decodeBatches(topic: string, partition: number, batches: readonly FetchedBatch[], from: bigint): { records: TransportRecord[]; next: bigint } {
  const records: TransportRecord[] = [];
  let next = from;
  for (const batch of batches) {
    const end = batch.firstOffset + BigInt(batch.lastOffsetDelta) + 1n;
    if (end > next) next = end;
    if ((batch.attributes & IS_CONTROL) !== 0) continue;
    for (const r of batch.records) {
      const offset = batch.firstOffset + BigInt(r.offsetDelta);
      if (offset < from) continue; // a batch starts before the requested offset
      // The library's pairs become the port's headers in place (the parse made them for this
      // answer alone): no array and no pair per header of our own (12 per record of the bench's
      // events). Indexed loops: an iterator per header was a large share of the allocations.
      const fetched = r.headers;
      for (let i = 0; i < fetched.length; i++) {
        const h = fetched[i]!;
        const name = h[0];
        if (typeof name !== 'string') h[0] = name === null ? '' : headerNameAt(name, 0, name.length, i);
        if (h[1] === null) h[1] = EMPTY;
      }
      const headers = fetched as RecordHeader[];
      records.push(Object.freeze({
        topic,
        partition,
        offset,
        timestampMs: Number(batch.firstTimestamp + r.timestampDelta),
        key: r.key,
        value: r.value,
        headers: Object.freeze(headers),
      }));
    }
  }
  return { records, next };
}
