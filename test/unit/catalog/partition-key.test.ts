import { describe, expect, it } from 'vitest';
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
