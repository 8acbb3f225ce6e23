/**
 * Record batches of a Fetch answer read straight from their bytes into the port's records.
 *
 * @platformatic/kafka's Fetch parse makes, per record, an object with a BigInt timestamp delta,
 * a Buffer for the key, the value and each header name and value, and an array per header: 14
 * Buffers and 14 arrays for one of the gateway's events, most of them living until the record is
 * handled, which on a push subscription can be a thousand records later. Here a record keeps the
 * answer's bytes and where its key, value and headers are; each is made on first read
 * ({@link FetchedRecord}). Headers are read only once a record is started, so records waiting in
 * a lane hold one object each. Only the records after the batch header are walked per record
 * (their lengths lead to the next one): a record's headers are not read until asked for.
 *
 * Rules implemented (Kafka's record batch format v2, `DefaultRecordBatch` / `DefaultRecord`):
 * - batch header: baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8 (2),
 *   crc uint32, attributes int16 (bits 0–2 compression, 3 timestamp type, 4 transactional,
 *   5 control), lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64, producerId int64,
 *   producerEpoch int16, baseSequence int32, records count int32, then the records (compressed as
 *   one block when the compression bits are set);
 * - record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint, key
 *   (varint length, -1 = null), value (same), header count varint, headers (name: varint length +
 *   UTF-8; value: varint length, -1 = null); varints are zig-zag encoded;
 * - a batch with the timestamp type bit set (LogAppendTime) gives every record its maxTimestamp;
 * - a last batch cut short by the fetch's size limit is left for the next fetch;
 * - read_committed: transaction markers (control batches) are never records; the batches of an
 *   aborted transaction (the answer's `aborted_transactions`: producer id and first offset) are
 *   left out from its first offset up to its abort marker, as Kafka's Java consumer does
 *   (`CompletedFetch`, KIP-98).
 * The batch CRC is not checked (neither does @platformatic/kafka; TCP and the broker's own check
 * on append guard the bytes).
 */
import { compressionsAlgorithmsByBitmask } from '@platformatic/kafka';
import { sameBytesAt } from '../../core/bytes.js';
import { GatewayError } from '../../core/errors.js';
import type { RecordHeader, TransportRecord } from '../port.js';

const BATCH_HEADER_BYTES = 61;
/** Bytes before `batchLength` counts: baseOffset and batchLength themselves. */
const LOG_OVERHEAD = 12;
const COMPRESSION_BITS = 0x07;
const LOG_APPEND_TIME = 1 << 3;
const IS_TRANSACTIONAL = 1 << 4;
const IS_CONTROL = 1 << 5;
const ABORT_MARKER = 0;
const EMPTY = new Uint8Array(0);
const NO_HEADERS: readonly RecordHeader[] = Object.freeze([]);

/** An aborted transaction of a Fetch answer (read_committed). */
export interface AbortedTransaction {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
}

function corrupt(what: string): GatewayError {
  return new GatewayError('CEG_BROKER_UNAVAILABLE', `malformed record batch in a fetch answer: ${what}`, { retriable: true });
}

/** A read position over one buffer; varints per Kafka's protocol (zig-zag). */
class Cursor {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** A zig-zag varint of at most 5 bytes (32 bits). */
  varint(): number {
    const buf = this.buf;
    let pos = this.pos;
    let raw = 0;
    for (let shift = 0; ; shift += 7) {
      if (pos >= this.end || shift > 28) throw corrupt('varint past the end of its record');
      const b = buf[pos++]!;
      raw |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) break;
    }
    this.pos = pos;
    return (raw >>> 1) ^ -(raw & 1);
  }

  /** A zig-zag varlong of at most 10 bytes, as a Number (exact up to 2^53: timestamps and their deltas). */
  varlong(): number {
    const buf = this.buf;
    let pos = this.pos;
    let raw = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      if (pos >= this.end || i > 9) throw corrupt('varlong past the end of its record');
      const b = buf[pos++]!;
      raw += (b & 0x7f) * scale;
      scale *= 128;
      if ((b & 0x80) === 0) break;
    }
    this.pos = pos;
    // raw is even: raw / 2; odd: -(raw + 1) / 2 (no bitwise operators: raw can pass 32 bits).
    return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
  }
}

/**
 * A header name as text. The records of a topic mostly carry the same names in the same order, so
 * the name last read at each position is kept with its bytes and reused when the bytes match: no
 * string is made per header (also for the library-parsed answers of ./records.ts). Bounded by
 * {@link MAX_NAME_SLOTS} positions of names up to {@link MAX_SLOT_NAME_BYTES} bytes.
 */
const nameSlots: ({ readonly bytes: Buffer; readonly text: string } | undefined)[] = [];
const MAX_NAME_SLOTS = 64;
const MAX_SLOT_NAME_BYTES = 64;

export function headerNameAt(buf: Buffer, at: number, length: number, position: number): string {
  const last = position < MAX_NAME_SLOTS ? nameSlots[position] : undefined;
  if (last !== undefined && last.bytes.length === length && sameBytesAt(last.bytes, buf, at)) return last.text;
  const text = buf.toString('utf8', at, at + length);
  // A copy: the slot must not keep the fetched answer alive.
  if (position < MAX_NAME_SLOTS && length <= MAX_SLOT_NAME_BYTES) nameSlots[position] = { bytes: Buffer.from(buf.subarray(at, at + length)), text };
  return text;
}

/**
 * A header value at a position: most of an event's headers carry the same value record after
 * record (specversion, type, source, dataschema, content type…), so the value last seen at each
 * position is kept (a copy) and handed out again when the bytes match, instead of a new view per
 * header per record. A position whose value keeps changing (id, time) is no longer compared after
 * {@link GIVE_UP} misses in a row, and tried again every {@link RETRY_AFTER} records. The values
 * handed out are shared: like every header value of the port, they are read, never written.
 * A shared value under the same name is handed out as the same (frozen) pair too: an array per
 * header per record was most of what a record's headers allocated (issue 8 heap profile).
 */
interface ValueSlot {
  bytes: Uint8Array;
  misses: number;
  /** The pair last made with `bytes` (its name may differ: compared when reused). */
  pair: RecordHeader | undefined;
}
const valueSlots: (ValueSlot | undefined)[] = [];
const MAX_SLOT_VALUE_BYTES = 128;
const GIVE_UP = 16;
const RETRY_AFTER = 4096;

/** A plain Uint8Array view of `length` bytes at `at` (a third of the cost of a Buffer's subarray). */
function viewAt(buf: Buffer, at: number, length: number): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset + at, length);
}

function headerAt(name: string, buf: Buffer, at: number, length: number, position: number): RecordHeader {
  if (position >= MAX_NAME_SLOTS || length > MAX_SLOT_VALUE_BYTES) return [name, viewAt(buf, at, length)];
  const slot = valueSlots[position];
  if (slot === undefined) {
    valueSlots[position] = { bytes: Uint8Array.prototype.slice.call(buf, at, at + length), misses: 0, pair: undefined };
    return [name, viewAt(buf, at, length)];
  }
  if (slot.misses >= GIVE_UP) {
    if (++slot.misses >= GIVE_UP + RETRY_AFTER) slot.misses = 0;
    return [name, viewAt(buf, at, length)];
  }
  const bytes = slot.bytes;
  if (bytes.length === length && sameBytesAt(bytes, buf, at)) {
    slot.misses = 0;
    const pair = slot.pair;
    if (pair !== undefined && pair[0] === name) return pair;
    return (slot.pair = Object.freeze([name, bytes] as const));
  }
  slot.misses++;
  slot.bytes = Uint8Array.prototype.slice.call(buf, at, at + length);
  slot.pair = undefined;
  return [name, viewAt(buf, at, length)];
}

/**
 * One fetched record: its place on Kafka and its bytes. `key`, `value` and `headers` are views of
 * the fetched answer (no copy), each made when first read and kept: the key and value as Buffers;
 * header values as plain Uint8Arrays (a third of the cost of a Buffer's subarray), shared between
 * records for values that repeat ({@link headerAt}); a null header value reads as empty
 * bytes, as on the kafkajs adapter. Immutable, as the port's records are.
 */
export class FetchedRecord implements TransportRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly timestampMs: number;
  readonly #buf: Buffer;
  /** Start of the key's length varint; the value, header count and headers follow it. */
  readonly #keyAt: number;
  /** End of the record. */
  readonly #end: number;
  #key: Buffer | null | undefined;
  #value: Buffer | null | undefined;
  #headers: readonly RecordHeader[] | undefined;
  /** Where the value's length varint starts, and then the header count's (known once the key / value was read). */
  #valueAt = -1;
  #headersAt = -1;

  constructor(topic: string, partition: number, offset: bigint, timestampMs: number, buf: Buffer, keyAt: number, end: number) {
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.timestampMs = timestampMs;
    this.#buf = buf;
    this.#keyAt = keyAt;
    this.#end = end;
    Object.freeze(this);
  }

  get key(): Buffer | null {
    if (this.#key === undefined) {
      const c = new Cursor(this.#buf, this.#keyAt, this.#end);
      this.#key = this.#bytes(c);
      this.#valueAt = c.pos;
    }
    return this.#key;
  }

  get value(): Buffer | null {
    if (this.#value === undefined) {
      if (this.#valueAt < 0) this.#findValue();
      const c = new Cursor(this.#buf, this.#valueAt, this.#end);
      this.#value = this.#bytes(c);
      this.#headersAt = c.pos;
    }
    return this.#value;
  }

  get headers(): readonly RecordHeader[] {
    if (this.#headers !== undefined) return this.#headers;
    if (this.#headersAt < 0) this.#findHeaders();
    const buf = this.#buf;
    const c = new Cursor(buf, this.#headersAt, this.#end);
    const count = c.varint();
    if (count < 0 || count > this.#end - c.pos) throw corrupt(`header count ${count}`);
    if (count === 0) return (this.#headers = NO_HEADERS);
    const headers: RecordHeader[] = new Array<RecordHeader>(count);
    for (let i = 0; i < count; i++) {
      const nameLength = c.varint();
      if (nameLength < 0 || c.pos + nameLength > this.#end) throw corrupt('header name past the end of its record');
      const name = headerNameAt(buf, c.pos, nameLength, i);
      c.pos += nameLength;
      const valueLength = c.varint();
      if (valueLength < 0) {
        headers[i] = [name, EMPTY];
        continue;
      }
      if (c.pos + valueLength > this.#end) throw corrupt('header value past the end of its record');
      headers[i] = headerAt(name, buf, c.pos, valueLength, i);
      c.pos += valueLength;
    }
    return (this.#headers = Object.freeze(headers));
  }

  /**
   * Where the headers start, found by stepping over the key and the value without a view of either: a consumer that reads the headers first (every subscription does) may never
   * need the key, and a view kept per record survives with it.
   */
  #findHeaders(): void {
    if (this.#valueAt < 0) this.#findValue();
    const c = new Cursor(this.#buf, this.#valueAt, this.#end);
    this.#skip(c);
    this.#headersAt = c.pos;
  }

  /** Where the value starts: after the key, stepped over. */
  #findValue(): void {
    const c = new Cursor(this.#buf, this.#keyAt, this.#end);
    this.#skip(c);
    this.#valueAt = c.pos;
  }

  /** Steps over varint length-prefixed bytes (-1 = null) at the cursor. */
  #skip(c: Cursor): void {
    const length = c.varint();
    if (length < 0) return;
    if (c.pos + length > this.#end) throw corrupt('key or value past the end of its record');
    c.pos += length;
  }

  /** Varint length-prefixed bytes (-1 = null) at the cursor, as a view. */
  #bytes(c: Cursor): Buffer | null {
    const length = c.varint();
    if (length < 0) return null;
    if (c.pos + length > this.#end) throw corrupt('key or value past the end of its record');
    const b = this.#buf.subarray(c.pos, c.pos + length);
    c.pos += length;
    return b;
  }
}

/**
 * The records of the record batches in `raw` (one partition's `records` of a Fetch answer) at or
 * after `from`, in offset order, and the offset to fetch next (after the last whole batch,
 * transaction markers and aborted batches included).
 * Errors: CEG_BROKER_UNAVAILABLE (retriable) for bytes that are not record batches of magic 2 or a
 *   record running past its batch; the library's UnsupportedCompressionError for an unknown codec.
 */
export function readRecordBatches(topic: string, partition: number, raw: Buffer, from: bigint, aborted: readonly AbortedTransaction[] = []): { records: FetchedRecord[]; next: bigint } {
  const records: FetchedRecord[] = [];
  let next = from;
  // read_committed: the aborted transactions by first offset; a producer is "aborting" from its
  // first offset until its abort marker.
  const pendingAborts = aborted.length === 0 ? aborted : [...aborted].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  let nextAbort = 0;
  let aborting: Set<bigint> | undefined;
  let at = 0;
  while (raw.length - at >= BATCH_HEADER_BYTES) {
    const batchLength = raw.readInt32BE(at + 8);
    const end = at + LOG_OVERHEAD + batchLength;
    if (batchLength < BATCH_HEADER_BYTES - LOG_OVERHEAD) throw corrupt(`batch length ${batchLength}`);
    if (end > raw.length) break; // cut short by the size limit: fetched again next time
    const magic = raw.readInt8(at + 16);
    if (magic !== 2) throw corrupt(`record batch magic ${magic} (only 2 is read)`);
    const baseOffset = raw.readBigInt64BE(at);
    const attributes = raw.readInt16BE(at + 21);
    const lastOffsetDelta = raw.readInt32BE(at + 23);
    const batchEnd = baseOffset + BigInt(lastOffsetDelta) + 1n;
    if (batchEnd > next) next = batchEnd;
    const batchAt = at;
    at = end;
    if (nextAbort < pendingAborts.length) {
      const lastOffset = batchEnd - 1n;
      while (nextAbort < pendingAborts.length && pendingAborts[nextAbort]!.firstOffset <= lastOffset) (aborting ??= new Set()).add(pendingAborts[nextAbort++]!.producerId);
    }
    const transactional = (attributes & IS_TRANSACTIONAL) !== 0;
    if ((attributes & IS_CONTROL) !== 0) {
      if (transactional && aborting !== undefined && controlType(raw, batchAt, end) === ABORT_MARKER) aborting.delete(raw.readBigInt64BE(batchAt + 43));
      continue;
    }
    if (transactional && aborting !== undefined && aborting.has(raw.readBigInt64BE(batchAt + 43))) continue;
    if (batchEnd <= from) continue; // wholly before the requested offset
    const baseTimestamp = Number(raw.readBigInt64BE(batchAt + 27));
    const appendTime = (attributes & LOG_APPEND_TIME) !== 0 ? Number(raw.readBigInt64BE(batchAt + 35)) : undefined;
    const count = raw.readInt32BE(batchAt + 57);
    const compression = attributes & COMPRESSION_BITS;
    let buf = raw;
    let c: Cursor;
    if (compression === 0) c = new Cursor(raw, batchAt + BATCH_HEADER_BYTES, end);
    else {
      buf = decompress(compression, raw.subarray(batchAt + BATCH_HEADER_BYTES, end));
      c = new Cursor(buf, 0, buf.length);
    }
    for (let i = 0; i < count; i++) {
      const length = c.varint();
      const recordEnd = c.pos + length;
      if (length < 0 || recordEnd > c.end) throw corrupt('record past the end of its batch');
      c.pos += 1; // attributes (unused)
      const timestampDelta = c.varlong();
      const offsetDelta = c.varint();
      const keyAt = c.pos;
      c.pos = recordEnd;
      const offset = baseOffset + BigInt(offsetDelta);
      if (offset < from) continue; // a batch starts before the requested offset
      records.push(new FetchedRecord(topic, partition, offset, appendTime ?? baseTimestamp + timestampDelta, buf, keyAt, recordEnd));
    }
  }
  return { records, next };
}

/** A control batch's marker type (its first record's key: version int16, type int16); -1 when unreadable. */
function controlType(raw: Buffer, batchAt: number, end: number): number {
  try {
    const c = new Cursor(raw, batchAt + BATCH_HEADER_BYTES, end);
    c.varint(); // length
    c.pos += 1; // attributes
    c.varlong();
    c.varint();
    const keyLength = c.varint();
    return keyLength >= 4 && c.pos + 4 <= end ? raw.readInt16BE(c.pos + 2) : -1;
  } catch {
    return -1;
  }
}

function decompress(bitmask: number, block: Buffer): Buffer {
  const algorithm = compressionsAlgorithmsByBitmask[bitmask];
  if (algorithm === undefined) throw corrupt(`unknown compression ${bitmask}`);
  const out: unknown = algorithm.decompressSync(block);
  if (Buffer.isBuffer(out)) return out;
  if (out instanceof Uint8Array) return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  // A DynamicBuffer (the library's multi-chunk buffer): its `buffer` is the bytes in one piece.
  return (out as { readonly buffer: Buffer }).buffer;
}
