/**
 * Record batches read from a Fetch answer's bytes (src/transport/platformatic/record-batches.ts)
 * against @platformatic/kafka's own reader of the same bytes: the same records (offsets,
 * timestamps, keys, values, header names and values, in order) for batches the library wrote,
 * compressed with every codec it has, from any requested offset, with a last batch cut short
 * (property); transaction markers and aborted transactions left out, committed ones kept;
 * LogAppendTime; malformed bytes refused with a retriable error.
 */
import { Reader, compressionsAlgorithms, createRecordsBatch, readRecordsBatches } from '@platformatic/kafka';
import type { MessageRecord } from '@platformatic/kafka';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { readRecordBatches } from '../../../src/transport/platformatic/record-batches.js';
import { decodeBatches } from '../../../src/transport/platformatic/records.js';
import type { FetchedBatch } from '../../../src/transport/platformatic/records.js';
import type { TransportRecord } from '../../../src/transport/port.js';

interface Msg {
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly (readonly [string, Uint8Array | null])[];
  readonly timestamp: bigint;
}

/** One batch as the library writes it, starting at `baseOffset` (the library writes 0 there; a broker sets it). */
function batchBytes(msgs: readonly Msg[], baseOffset: bigint, options: Parameters<typeof createRecordsBatch>[1] = {}): Buffer {
  const toProduce = msgs.map(
    (m) =>
      ({
        topic: 't',
        key: m.key === null ? undefined : Buffer.from(m.key),
        value: m.value === null ? undefined : Buffer.from(m.value),
        headers: new Map(m.headers.map(([n, v]) => [Buffer.from(n, 'utf8'), v === null ? (null as unknown as Buffer) : Buffer.from(v)] as [Buffer, Buffer])),
        timestamp: m.timestamp,
      }) as MessageRecord, // a null key or value is written as null (the library's type leaves that out)
  );
  const b = createRecordsBatch(toProduce, options).buffer;
  b.writeBigInt64BE(baseOffset, 0);
  return b;
}

/** The library's reading of the same bytes, through the adapter's earlier conversion. */
function libraryRead(raw: Buffer, from: bigint): { records: TransportRecord[]; next: bigint } {
  const batches = readRecordsBatches(Reader.from(raw)) as unknown as FetchedBatch[];
  return decodeBatches('t', 3, batches, from);
}

const plain = (r: TransportRecord) => ({
  topic: r.topic,
  partition: r.partition,
  offset: r.offset,
  timestampMs: r.timestampMs,
  key: r.key === null ? null : [...r.key],
  value: r.value === null ? null : [...r.value],
  headers: r.headers.map(([n, v]) => [n, [...v]]),
});

const bytes = (max: number) => fc.uint8Array({ maxLength: max });
const headerName = fc.oneof(fc.constantFrom('ce_id', 'ce_type', 'content-type', 'ce_time'), fc.string({ maxLength: 20 }), fc.string({ unit: 'grapheme', maxLength: 6 }));
const msg: fc.Arbitrary<Msg> = fc.record({
  key: fc.option(bytes(12), { nil: null }),
  value: fc.option(bytes(300), { nil: null }),
  headers: fc.array(fc.tuple(headerName, fc.option(bytes(40), { nil: null })), { maxLength: 14 }),
  timestamp: fc.bigInt({ min: 1_600_000_000_000n, max: 1_900_000_000_000n }),
});

describe('readRecordBatches', () => {
  it('reads what @platformatic/kafka reads, for every codec, any start offset and a last batch cut short (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(msg, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }),
        // zstd needs Node ≥ 22.15 (node:zlib); the others always run.
        fc.constantFrom(...(['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const).filter((c) => compressionsAlgorithms[c].available)),
        fc.bigInt({ min: 0n, max: 1n << 40n }),
        fc.nat(40),
        fc.nat(),
        (batches, compression, base, skip, cut) => {
          let offset = base;
          const parts = batches.map((msgs) => {
            const b = batchBytes(msgs, offset, { compression });
            offset += BigInt(msgs.length);
            return b;
          });
          const whole = Buffer.concat(parts);
          const from = base + BigInt(skip);
          const ours = readRecordBatches('t', 3, whole, from);
          const theirs = libraryRead(whole, from);
          expect(ours.records.map(plain)).toEqual(theirs.records.map(plain));
          // Read in another order (headers first, as a subscription does; then the value, then the key): the same.
          const backwards = readRecordBatches('t', 3, whole, from).records.map((r) => ({ headers: r.headers.map(([n, v]) => [n, [...v]]), value: r.value === null ? null : [...r.value], key: r.key === null ? null : [...r.key] }));
          expect(backwards).toEqual(theirs.records.map((r) => ({ headers: r.headers.map(([n, v]) => [n, [...v]]), value: r.value === null ? null : [...r.value], key: r.key === null ? null : [...r.key] })));
          expect(ours.next).toBe(theirs.next);
          expect(ours.records.length).toBe(Math.max(0, Number(offset - from)));
          // The last batch cut short (a fetch's size limit): only the whole batches before it.
          const last = parts[parts.length - 1]!;
          const shortened = whole.subarray(0, whole.length - 1 - (cut % last.length));
          const partial = readRecordBatches('t', 3, shortened, from);
          expect(partial.records.map(plain)).toEqual(ours.records.filter((r) => r.offset < offset - BigInt(batches[batches.length - 1]!.length)).map(plain));
          expect(partial.next).toBe(parts.length === 1 ? from : offset - BigInt(batches[batches.length - 1]!.length) > from ? offset - BigInt(batches[batches.length - 1]!.length) : from);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('gives the right value at every position when values repeat, change, and keep changing (shared values, property)', () => {
    // Values from a small pool: a position repeats its value, changes it, and (over 16 changes in a
    // row) stops being compared and is tried again later; every value read must still be its own bytes.
    const pooled = fc.constantFrom(...['', 'a', 'ab', 'abc', 'x'.repeat(127), 'y'.repeat(128), 'y'.repeat(129)].map((v) => Buffer.from(v)));
    // Names change too, now and then: a shared pair must never carry another position's name.
    const header = fc.tuple(fc.constantFrom('h', 'h', 'h', 'g'), fc.option(pooled, { nil: null, freq: 8 }));
    fc.assert(
      fc.property(fc.array(fc.array(header, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 120 }), (rows) => {
        const raw = batchBytes(
          rows.map((pairs) => ({ key: null, value: null, headers: pairs.map(([n, v], i) => [`${n}${i}`, v] as const), timestamp: 1n })),
          0n,
        );
        const records = readRecordBatches('t', 0, raw, 0n).records;
        records.forEach((r, k) => {
          expect(r.headers.map(([n, v]) => [n, Buffer.from(v).toString()])).toEqual(rows[k]!.map(([n, v], i) => [`${n}${i}`, v === null ? '' : v.toString()]));
        });
      }),
      { numRuns: 60 },
    );
  });

  it('hands out a value that repeats under the same name as one frozen pair, and a changing value as its own', async () => {
    // A fresh copy of the module: the tests above left its per-position slots in some state.
    vi.resetModules();
    const { readRecordBatches } = await import('../../../src/transport/platformatic/record-batches.js');
    const rows = ['1', '2', '3'].map((id) => ({ key: null, value: null, headers: [['ce_specversion', Buffer.from('1.0')], ['ce_id', Buffer.from(id)]] as [string, Buffer][], timestamp: 1n }));
    const records = readRecordBatches('t', 0, batchBytes(rows, 0n), 0n).records;
    // The first record's value is a view (its slot is new); from the second on, one shared pair.
    const [, b, c] = records.map((r) => r.headers);
    expect(c![0]).toBe(b![0]);
    expect(Object.isFrozen(b![0])).toBe(true);
    expect(c![1]).not.toBe(b![1]);
    expect(records.map((r) => Buffer.from(r.headers[1]![1]).toString())).toEqual(['1', '2', '3']);
  });

  it('makes each view once: the same headers, key and value on every read, frozen, null header values as empty bytes', () => {
    const raw = batchBytes([{ key: null, value: Buffer.from('v'), headers: [['a', null], ['b', Buffer.from('x')]], timestamp: 5n }], 0n);
    const [r] = readRecordBatches('t', 0, raw, 0n).records;
    expect(r!.headers).toBe(r!.headers);
    expect(r!.value).toBe(r!.value);
    expect(r!.key).toBeNull();
    expect(Object.isFrozen(r)).toBe(true);
    expect(Object.isFrozen(r!.headers)).toBe(true);
    expect(r!.headers.map(([n, v]) => [n, [...v]])).toEqual([
      ['a', []],
      ['b', [0x78]],
    ]);
  });

  /** A control batch (transaction marker) of `producerId`: ABORT (0) or COMMIT (1). */
  function marker(producerId: bigint, type: 0 | 1, offset: bigint): Buffer {
    const b = batchBytes([{ key: Buffer.from([0, 0, 0, type]), value: Buffer.from([0, 0, 0, 0, 0, 0]), headers: [], timestamp: 1n }], offset, { producerId, transactionalId: 'tx' });
    b.writeInt16BE(b.readInt16BE(21) | (1 << 5), 21);
    return b;
  }
  const txData = (producerId: bigint, offset: bigint, values: string[]) =>
    batchBytes(
      values.map((v) => ({ key: null, value: Buffer.from(v), headers: [], timestamp: 1n })),
      offset,
      { producerId, transactionalId: 'tx' },
    );
  const values = (rs: readonly TransportRecord[]) => rs.map((r) => Buffer.from(r.value!).toString());

  it('leaves out transaction markers and the batches of aborted transactions up to their abort marker (read_committed)', () => {
    const raw = Buffer.concat([
      txData(7n, 0n, ['aborted-1', 'aborted-2']), // 0–1, producer 7, aborted
      txData(8n, 2n, ['committed-1']), // 2, producer 8
      txData(7n, 3n, ['aborted-3']), // 3, producer 7, same aborted transaction
      marker(7n, 0, 4n), // 4: ABORT of producer 7
      marker(8n, 1, 5n), // 5: COMMIT of producer 8
      txData(7n, 6n, ['committed-2']), // 6: producer 7's next transaction (committed)
      batchBytes([{ key: null, value: Buffer.from('plain'), headers: [], timestamp: 1n }], 7n), // 7: not transactional
    ]);
    const { records, next } = readRecordBatches('t', 0, raw, 0n, [{ producerId: 7n, firstOffset: 0n }]);
    expect(values(records)).toEqual(['committed-1', 'committed-2', 'plain']);
    expect(records.map((r) => r.offset)).toEqual([2n, 6n, 7n]);
    expect(next).toBe(8n);
    // Without the answer's aborted transactions (read_uncommitted would see them): only markers are left out.
    expect(values(readRecordBatches('t', 0, raw, 0n).records)).toEqual(['aborted-1', 'aborted-2', 'committed-1', 'aborted-3', 'committed-2', 'plain']);
    // An aborted transaction that starts later than this producer's earlier batches leaves those alone.
    expect(values(readRecordBatches('t', 0, raw, 0n, [{ producerId: 7n, firstOffset: 3n }]).records)).toEqual(['aborted-1', 'aborted-2', 'committed-1', 'committed-2', 'plain']);
  });

  it('gives every record of a LogAppendTime batch the batch’s max timestamp', () => {
    const raw = batchBytes(
      [1n, 2n, 3n].map((t) => ({ key: null, value: Buffer.from([Number(t)]), headers: [], timestamp: 1_700_000_000_000n + t })),
      0n,
    );
    expect(readRecordBatches('t', 0, raw, 0n).records.map((r) => r.timestampMs)).toEqual([1_700_000_000_001, 1_700_000_000_002, 1_700_000_000_003]);
    raw.writeInt16BE(raw.readInt16BE(21) | (1 << 3), 21);
    raw.writeBigInt64BE(1_700_000_009_999n, 35);
    expect(readRecordBatches('t', 0, raw, 0n).records.map((r) => r.timestampMs)).toEqual([1_700_000_009_999, 1_700_000_009_999, 1_700_000_009_999]);
  });

  it('refuses bytes that are not record batches of magic 2, or a record running past its batch, with a retriable error', () => {
    const good = batchBytes([{ key: null, value: Buffer.from('abc'), headers: [['h', Buffer.from('v')]], timestamp: 1n }], 0n);
    const oldMagic = Buffer.from(good);
    oldMagic.writeInt8(1, 16);
    const longRecord = Buffer.from(good);
    longRecord.writeUInt8(0x7e, 61); // the record's length varint: 63 bytes, past the batch
    for (const bad of [oldMagic, longRecord]) {
      let caught: unknown;
      try {
        readRecordBatches('t', 0, bad, 0n);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(GatewayError);
      expect((caught as GatewayError).retriable).toBe(true);
    }
  });
});
