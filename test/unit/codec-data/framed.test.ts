import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { avroType, encodeAvro, encodeAvroFramed, frame, unframe } from '../../../src/codec/data/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { record, violationsOf } from './helpers.js';

const type = avroType(record([{ name: 's', type: 'string' }, { name: 'n', type: 'long' }, { name: 'tags', type: { type: 'array', items: 'string' } }], 'Framed'));

describe('encodeAvroFramed (issue 14: the frame without a second copy)', () => {
  it('gives the same bytes as frame(id, encodeAvro(…)) for any value and id, values larger than the scratch buffer included', () => {
    const value = fc.record({ s: fc.string({ maxLength: 200 }), n: fc.integer(), tags: fc.array(fc.string({ maxLength: 40 }), { maxLength: 30 }) });
    fc.assert(
      fc.property(value, fc.integer({ min: 0, max: 0xffffffff }), fc.nat({ max: 3 }), (v, id, grow) => {
        // Now and then a value of 100 KiB+ that cannot fit the 64 KiB scratch buffer.
        const json = grow === 0 ? { ...v, s: 'x'.repeat(100_000 + v.s.length) } : v;
        const framed = encodeAvroFramed(type, json, id);
        expect(framed.equals(frame(id, encodeAvro(type, json)))).toBe(true);
        expect(unframe(framed).schemaId).toBe(id);
      }),
      { numRuns: 200 },
    );
  });

  it('returns values that do not share memory with each other (the scratch buffer is reused)', () => {
    const a = encodeAvroFramed(type, { s: 'first', n: 1, tags: [] }, 7);
    const copy = Buffer.from(a);
    encodeAvroFramed(type, { s: 'second value', n: 2, tags: ['t'] }, 8);
    expect(a.equals(copy)).toBe(true);
  });

  it('refuses invalid data naming the field, and an out-of-range schema id', () => {
    expect(violationsOf(() => encodeAvroFramed(type, { s: 1, n: 1, tags: [] }, 1))[0]?.field).toBe('/s');
    expect(() => encodeAvroFramed(type, { s: 'a', n: 1, tags: [] }, -1)).toThrow(GatewayError);
    expect(() => encodeAvroFramed(type, { s: 'a', n: 1, tags: [] }, 2 ** 32)).toThrow(/unsigned 32-bit/);
  });
});
