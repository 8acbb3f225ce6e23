/**
 * `sameBytes` (the consume path's header caches compare fetched bytes with the last ones seen):
 * the same answer as Buffer.equals for any two byte arrays, Buffers (views into a larger buffer,
 * as a fetch hands them over) or plain Uint8Arrays alike.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sameBytes } from '../../../src/core/bytes.js';

describe('sameBytes', () => {
  it('property: agrees with Buffer.equals on plain arrays and on views into a larger buffer', () => {
    const bytes = fc.uint8Array({ maxLength: 64 });
    fc.assert(
      fc.property(bytes, bytes, fc.boolean(), fc.nat({ max: 16 }), (a, b, sameAsA, at) => {
        const other = sameAsA ? new Uint8Array(a) : b;
        // A view at an offset into a larger buffer, as a fetched header value is.
        const backing = Buffer.alloc(at + other.length + 8, 0xab);
        backing.set(other, at);
        const view = backing.subarray(at, at + other.length);
        const expected = Buffer.from(a).equals(Buffer.from(other));
        expect(sameBytes(a, other)).toBe(expected);
        expect(sameBytes(a, view)).toBe(expected);
        expect(sameBytes(view, a)).toBe(expected);
      }),
    );
  });

  it('differs on length alone and on the last byte alone', () => {
    expect(sameBytes(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2]))).toBe(false);
    expect(sameBytes(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4]))).toBe(false);
    expect(sameBytes(new Uint8Array(0), Buffer.alloc(0))).toBe(true);
  });
});
