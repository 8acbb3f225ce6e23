import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_ENVELOPE_LIMITS, attributeEntries, checkAttributeLimits, checkEnvelopeLimits, describeLimitBreach } from '../../../src/envelope/index.js';

const enc = new TextEncoder();
const limits = { maxAttributes: 4, maxAttributeBytes: 40 };
const exactBytes = (entries: readonly (readonly [string, string | Uint8Array])[]): number =>
  entries.reduce((n, [k, v]) => n + enc.encode(k).length + (typeof v === 'string' ? enc.encode(v).length : v.byteLength), 0);

describe('envelope limits', () => {
  it('accepts up to the bounds, counting names and values in UTF-8 bytes', () => {
    const at: [string, string][] = [['ce_id', '12345'], ['ce_type', 'abcdefghijklmnopqrstuvw']];
    expect(exactBytes(at)).toBe(40);
    expect(checkEnvelopeLimits(at, limits)).toBeUndefined();
    expect(checkEnvelopeLimits([...at, ['x', '']], limits)).toMatchObject({ limit: 'maxAttributeBytes', max: 40 });
  });

  it('counts multi-byte characters by their UTF-8 length, for names, strings and bytes alike', () => {
    const euro: [string, string][] = [['€€', '€€€€€€€€€€']]; // 6 + 30 bytes
    expect(checkEnvelopeLimits(euro, limits)).toBeUndefined();
    expect(checkEnvelopeLimits([...euro, ['ab', '€€']], limits)).toMatchObject({ limit: 'maxAttributeBytes' }); // 36 + 2 + 6
    expect(checkEnvelopeLimits([['a', new Uint8Array(39)]], limits)).toBeUndefined();
    expect(checkEnvelopeLimits([['a', new Uint8Array(40)]], limits)).toMatchObject({ limit: 'maxAttributeBytes', max: 40 });
  });

  it('refuses more attributes than the bound, from the count alone when it is given', () => {
    const five: [string, string][] = ['a', 'b', 'c', 'd', 'e'].map((k) => [k, '']);
    expect(checkEnvelopeLimits(five.slice(0, 4), limits)).toBeUndefined();
    expect(checkEnvelopeLimits(five, limits)).toEqual({ limit: 'maxAttributes', max: 4, actual: 5 });
    // A generator that would never end is not walked when the count already breaks the bound.
    function* endless(): Generator<[string, string]> {
      for (;;) yield ['x', 'y'];
    }
    expect(checkEnvelopeLimits(endless(), limits, 50_000)).toEqual({ limit: 'maxAttributes', max: 4, actual: 50_000 });
    expect(checkEnvelopeLimits(endless(), limits)).toMatchObject({ limit: 'maxAttributes' });
  });

  it('agrees with an exact count on generated inputs (fast path and slow path)', () => {
    const alphabet = ['a', 'é', '€', '😀', 'Z', '_'];
    let seed = 7;
    const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 2000; i++) {
      const entries: [string, string][] = Array.from({ length: rnd(6) }, () => [
        Array.from({ length: 1 + rnd(5) }, () => alphabet[rnd(alphabet.length)]).join(''),
        Array.from({ length: rnd(12) }, () => alphabet[rnd(alphabet.length)]).join(''),
      ]);
      // The oracle: walk in order; the first bound broken is the one reported.
      let expected: string | undefined;
      for (let k = 1; k <= entries.length && expected === undefined; k++) {
        if (k > limits.maxAttributes) expected = 'maxAttributes';
        else if (exactBytes(entries.slice(0, k)) > limits.maxAttributeBytes) expected = 'maxAttributeBytes';
      }
      expect(checkEnvelopeLimits(entries, limits)?.limit).toBe(expected);
    }
  });

  it('describes a breach in one line naming the limit', () => {
    expect(describeLimitBreach({ limit: 'maxAttributes', max: 100, actual: 50_004 })).toBe('50004 attributes, more than maxAttributes (100)');
    expect(describeLimitBreach({ limit: 'maxAttributeBytes', max: 16_384, actual: 900_010 })).toMatch(/maxAttributeBytes/);
    expect(DEFAULT_ENVELOPE_LIMITS).toEqual({ maxAttributes: 100, maxAttributeBytes: 16_384 });
  });
});

describe('checkAttributeLimits (attribute maps, issue 14 fast path)', () => {
  const value = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 12 }), fc.integer(), fc.boolean(), fc.constant(undefined));
  const attributes = fc.dictionary(fc.stringMatching(/^[a-z0-9]{1,12}$/), value, { maxKeys: 8 });
  const bounds = fc.record({ maxAttributes: fc.integer({ min: 0, max: 8 }), maxAttributeBytes: fc.integer({ min: 0, max: 200 }) });

  it('gives the same answer as checkEnvelopeLimits over attributeEntries, near the bounds and far from them', () => {
    fc.assert(
      fc.property(attributes, bounds, (a, l) => {
        expect(checkAttributeLimits(a, l)).toEqual(checkEnvelopeLimits(attributeEntries(a), l));
      }),
      { numRuns: 2000 },
    );
  });
});
