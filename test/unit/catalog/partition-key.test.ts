import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PARTITION_KEY_PATTERN } from '../../../src/envelope/attribute-types.js';
import { GatewayError } from '../../../src/core/errors.js';
import { loadCatalog, partitionKey, sanitizeKeyPart } from '../../../src/catalog/index.js';

const catalog = loadCatalog();
const price = catalog.byName('PriceLoadingCompleted')!;
const guide = catalog.byName('WritingGuideContentChanged')!;

describe('partitionKey', () => {
  it('joins sanitised key fields with "_" (DESIGN example EUR-USD_H4)', () => {
    expect(partitionKey(price, { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'x' })).toBe('EUR-USD_H4');
    expect(partitionKey(price, { instrument: 'XAU USD.spot', timeframe: 'M15' })).toBe('XAU-USD-spot_M15');
  });

  it('uses a single key field as is when it is already clean', () => {
    expect(partitionKey(guide, { documentId: 'guide-42' })).toBe('guide-42');
  });

  it('always yields [A-Za-z0-9._-]', () => {
    const k = partitionKey(price, { instrument: 'ü/€\n"x"', timeframe: '../__H4' });
    expect(k).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(k).toBe('-----x-_-----H4');
  });

  it('a key every reader takes, or an error naming a key field: never one longer than 249 characters (fuzz report F1: accepted, then dead-lettered as poison)', () => {
    expect(partitionKey(price, { instrument: 'x'.repeat(246), timeframe: 'H4' })).toHaveLength(249);
    try {
      partitionKey(price, { instrument: 'x'.repeat(247), timeframe: 'H4' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).code).toBe('CEG_INVALID_DATA');
      expect((err as GatewayError).details['field']).toBe('/timeframe');
      expect((err as GatewayError).message).toMatch(/longer than 249 characters/);
    }
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 300 }), fc.string({ minLength: 1, maxLength: 40 }), (instrument, timeframe) => {
        let key: string;
        try {
          key = partitionKey(price, { instrument, timeframe });
        } catch (err) {
          return err instanceof GatewayError && err.code === 'CEG_INVALID_DATA' && instrument.length + 1 + timeframe.length > 249;
        }
        return PARTITION_KEY_PATTERN.test(key);
      }),
    );
  });

  it('sanitises every non-alphanumeric character, including "_" and "."', () => {
    expect(sanitizeKeyPart('a_b.c-d')).toBe('a-b-c-d');
  });

  it('names the missing, non-string or empty field', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ instrument: 'EUR/USD' }, '/timeframe', /absent/],
      [{ instrument: 1, timeframe: 'H4' }, '/instrument', /must be a string/],
      [{ instrument: '', timeframe: 'H4' }, '/instrument', /empty/],
      [{ instrument: null, timeframe: 'H4' }, '/instrument', /absent/],
    ];
    for (const [data, field, reason] of cases) {
      try {
        partitionKey(price, data as never);
        expect.unreachable();
      } catch (err) {
        expect(err).toBeInstanceOf(GatewayError);
        const e = err as GatewayError;
        expect([e.code, e.retriable, e.details['field']]).toEqual(['CEG_INVALID_DATA', false, field]);
        expect(e.message).toMatch(reason);
      }
    }
  });

  it('refuses data that is not an object', () => {
    expect(() => partitionKey(price, [1, 2])).toThrow(/must be a JSON object/);
    expect(() => partitionKey(price, undefined)).toThrow(GatewayError);
  });
});
