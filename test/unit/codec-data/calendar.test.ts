/**
 * `parseDateTime` is written by hand for speed (issue 14); these tests hold it to the regular
 * expression it replaced, kept here as the reference: same accepted texts, same instants, same
 * reasons, for random texts built around the date-time grammar.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { daysFromCivil, dateProblem, parseDateTime } from '../../../src/codec/data/calendar.js';

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** The implementation before issue 14, verbatim in behaviour. */
function reference(text: string): { seconds: number; nanos: number } | string {
  const m = DATE_TIME.exec(text);
  if (m === null) return 'expected an RFC 3339 date-time with an offset, e.g. 2026-08-01T10:00:00Z';
  const [, ys, mos, ds, hs, mis, ss, frac, z, sign, ohs, oms] = m;
  const year = Number(ys), month = Number(mos), day = Number(ds);
  const h = Number(hs), mi = Number(mis), s = Number(ss);
  const problem = dateProblem(year, month, day) ?? (h > 23 ? 'hour must be 00–23' : mi > 59 ? 'minute must be 00–59' : s === 60 ? 'leap second 60 cannot be represented' : s > 59 ? 'second must be 00–59' : undefined);
  if (problem !== undefined) return problem;
  let offset = 0;
  if (z === undefined) {
    const oh = Number(ohs), om = Number(oms);
    if (oh > 23 || om > 59) return 'offset must be within ±23:59';
    offset = (sign === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  return { seconds: daysFromCivil(year, month, day) * 86400 + h * 3600 + mi * 60 + s - offset, nanos: frac === undefined ? 0 : Number(frac.padEnd(9, '0')) };
}

const digits = (n: number): fc.Arbitrary<string> => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''));
/** Texts near the grammar: each part usually right, sometimes replaced by a random character or dropped. */
const part = (good: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.oneof({ weight: 8, arbitrary: good }, { weight: 1, arbitrary: fc.string({ maxLength: 3 }) }, { weight: 1, arbitrary: fc.constant('') });
const nearDateTime = fc
  .tuple(
    part(digits(4)),
    part(fc.constant('-')),
    part(digits(2)),
    part(fc.constant('-')),
    part(digits(2)),
    part(fc.constantFrom('T', 't', ' ')),
    part(digits(2)),
    part(fc.constant(':')),
    part(digits(2)),
    part(fc.constant(':')),
    part(digits(2)),
    fc.oneof(fc.constant(''), fc.integer({ min: 0, max: 11 }).chain((n) => (n === 0 ? fc.constant('.') : digits(n).map((d) => `.${d}`)))),
    part(fc.oneof(fc.constantFrom('Z', 'z'), fc.tuple(fc.constantFrom('+', '-'), digits(2), fc.constantFrom(':', ''), digits(2)).map((p) => p.join('')))),
  )
  .map((p) => p.join(''));

describe('parseDateTime (by hand) equals the RFC 3339 pattern it replaced', () => {
  it('agrees on random texts near the grammar: accepted or not, the instant, the reason', () => {
    fc.assert(
      fc.property(nearDateTime, (text) => {
        expect(parseDateTime(text)).toEqual(reference(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (text) => {
        expect(parseDateTime(text)).toEqual(reference(text));
      }),
    );
  });

  it('reads the examples', () => {
    expect(parseDateTime('2022-03-15T12:00:01.250Z')).toEqual({ seconds: 1647345601, nanos: 250_000_000 });
    expect(parseDateTime('2022-03-15t13:00:01.000000001+01:00')).toEqual({ seconds: 1647345601, nanos: 1 });
    expect(parseDateTime('0000-01-01T00:00:00-00:00')).toEqual(reference('0000-01-01T00:00:00-00:00'));
    expect(parseDateTime('2023-02-29T00:00:00Z')).toBe(dateProblem(2023, 2, 29));
    expect(parseDateTime('2022-03-15T12:00:60Z')).toBe('leap second 60 cannot be represented');
    expect(parseDateTime('2022-03-15T12:00:00+24:00')).toBe('offset must be within ±23:59');
    expect(parseDateTime('2022-03-15T12:00:00.1234567890Z')).toMatch(/^expected an RFC 3339/);
    expect(parseDateTime('２０２２-03-15T12:00:00Z')).toMatch(/^expected an RFC 3339/);
  });
});
