/**
 * Fetched record batches → port records (@platformatic/kafka adapter): offsets from the batch's
 * first offset, records before the requested offset and transaction markers left out, the next
 * offset after the last batch; header names as text whatever the names at the same position in
 * the records before (names are cached per position), header values, keys and values handed on as
 * the library's Buffers, a null header value as empty bytes (property).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBatches } from '../../../src/transport/platformatic/records.js';
import type { FetchedBatch } from '../../../src/transport/platformatic/records.js';

const name = fc.oneof(fc.constantFrom('ce_id', 'ce_type', 'ce_source', 'content-type', 'ce_idx', 'ce_i'), fc.string({ maxLength: 80 }), fc.string({ unit: 'grapheme', maxLength: 10 }));
const header = fc.tuple(name, fc.option(fc.uint8Array({ maxLength: 16 }), { nil: null }));
const record = fc.record({ headers: fc.array(header, { maxLength: 70 }), key: fc.option(fc.uint8Array({ maxLength: 8 }), { nil: null }), value: fc.option(fc.uint8Array({ maxLength: 8 }), { nil: null }) });

describe('decodeBatches', () => {
  it('keeps every header name, value and order, whatever came at the same position before (property)', () => {
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 12 }), (recs) => {
        const batch: FetchedBatch = {
          firstOffset: 10n,
          firstTimestamp: 1000n,
          attributes: 0,
          lastOffsetDelta: recs.length - 1,
          records: recs.map((r, i) => ({
            offsetDelta: i,
            timestampDelta: BigInt(i),
            key: r.key === null ? null : Buffer.from(r.key),
            value: r.value === null ? null : Buffer.from(r.value),
            headers: r.headers.map(([n, v]) => [Buffer.from(n, 'utf8'), v === null ? null : Buffer.from(v)] as const),
          })),
        };
        // The library's values as fetched (decodeBatches turns its pairs into headers in place).
        const fetchedValues = batch.records.map((r) => r.headers.map(([, v]) => v));
        const { records, next } = decodeBatches('t', 2, [batch], 10n);
        expect(next).toBe(10n + BigInt(recs.length));
        expect(records.map((r) => r.offset)).toEqual(recs.map((_, i) => 10n + BigInt(i)));
        records.forEach((r, i) => {
          const fetched = batch.records[i]!;
          expect(r.headers.map(([n]) => n)).toEqual(recs[i]!.headers.map(([n]) => Buffer.from(n, 'utf8').toString('utf8')));
          r.headers.forEach(([n, v], j) => {
            expect(typeof n).toBe('string');
            const raw = fetchedValues[i]![j]!;
            if (raw === null) expect(v.byteLength).toBe(0);
            else expect(v).toBe(raw); // the library's Buffer, not a copy
          });
          expect(r.key).toBe(fetched.key);
          expect(r.value).toBe(fetched.value);
          expect(r.timestampMs).toBe(1000 + i);
          expect([r.topic, r.partition]).toEqual(['t', 2]);
        });
        // The same answer decoded again (its pairs already turned) gives the same records.
        expect(decodeBatches('t', 2, [batch], 10n).records).toEqual(records);
      }),
    );
  });

  it('leaves out records before the requested offset and transaction markers, and fetches next after the last batch', () => {
    const one = (offsetDelta: number) => ({ offsetDelta, timestampDelta: 0n, key: null, value: Buffer.from([offsetDelta]), headers: [] });
    const data: FetchedBatch = { firstOffset: 0n, firstTimestamp: 0n, attributes: 0, lastOffsetDelta: 2, records: [one(0), one(1), one(2)] };
    const marker: FetchedBatch = { firstOffset: 3n, firstTimestamp: 0n, attributes: 1 << 5, lastOffsetDelta: 0, records: [one(0)] };
    const { records, next } = decodeBatches('t', 0, [data, marker], 1n);
    expect(records.map((r) => r.offset)).toEqual([1n, 2n]);
    expect(next).toBe(4n);
  });
});
