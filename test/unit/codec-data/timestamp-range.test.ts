/**
 * What ingress accepts in data must be readable by the decoder: a timestamp whose instant in UTC
 * is outside years 0000–9999 was accepted (only the local year was checked) and then could not be
 * written back (every subscriber dead-lettered it as poison). Checked with examples and with
 * generated RFC 3339 texts at the edges for every logical type with a text form: either the
 * ingress-side parse refuses, or encode → decode → format succeeds and gives the same value.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { avroType, decodeAvro, encodeAvro } from '../../../src/codec/data/index.js';
import { parseDateTime } from '../../../src/codec/data/calendar.js';
import { GatewayError } from '../../../src/core/errors.js';
import { record, violationsOf } from './helpers.js';

const t = avroType(
  record([
    { name: 'ms', type: ['null', { type: 'long', logicalType: 'timestamp-millis' }], default: null },
    { name: 'us', type: ['null', { type: 'long', logicalType: 'timestamp-micros' }], default: null },
    { name: 'day', type: ['null', { type: 'int', logicalType: 'date' }], default: null },
    { name: 'tm', type: ['null', { type: 'int', logicalType: 'time-millis' }], default: null },
    { name: 'tu', type: ['null', { type: 'long', logicalType: 'time-micros' }], default: null },
    { name: 'lms', type: ['null', { type: 'long', logicalType: 'local-timestamp-millis' }], default: null },
    { name: 'lus', type: ['null', { type: 'long', logicalType: 'local-timestamp-micros' }], default: null },
  ]),
);

describe('timestamps whose instant in UTC is outside years 0000–9999', () => {
  it.each([
    ['ms', '9999-12-31T23:59:59-12:00', 10000],
    ['ms', '9999-12-31T12:00:00-12:00', 10000],
    ['ms', '0000-01-01T00:30:00+01:00', -1],
    ['ms', '0000-01-01T00:00:00.000+00:01', -1],
    ['us', '9999-12-31T23:59:59.999999-00:01', 10000],
    ['us', '0000-01-01T00:00:00+23:59', -1],
  ])('%s %s is refused at ingress, naming the field and the UTC year', (field, text, year) => {
    const v = violationsOf(() => encodeAvro(t, { [field]: text }));
    expect(v).toEqual([{ field: `/${field}`, reason: expect.stringContaining(`year ${year}, outside 0000–9999`) as string }]);
  });

  it.each([
    ['ms', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['ms', '9999-12-31T11:59:59-12:00', '9999-12-31T23:59:59.000Z'],
    ['ms', '0000-01-01T00:00:00Z', '0000-01-01T00:00:00.000Z'],
    ['ms', '0000-01-01T00:30:00-01:00', '0000-01-01T01:30:00.000Z'],
    ['us', '9999-12-31T23:59:59.999999-00:00', '9999-12-31T23:59:59.999999Z'],
    ['us', '0000-01-01T00:00:00.000001+00:00', '0000-01-01T00:00:00.000001Z'],
  ])('%s %s, the edge itself, is accepted and reads back as %s', (field, text, back) => {
    expect(decodeAvro(t, encodeAvro(t, { [field]: text }))).toMatchObject({ [field]: back });
  });
});

const pad = (n: number, w: number): string => String(n).padStart(w, '0');
const year = fc.oneof(fc.constantFrom(0, 1, 1969, 1970, 9998, 9999), fc.integer({ min: 0, max: 9999 }));
const month = fc.oneof(fc.constantFrom(1, 2, 12), fc.integer({ min: 0, max: 13 }));
const day = fc.oneof(fc.constantFrom(1, 28, 29, 30, 31), fc.integer({ min: 0, max: 32 }));
const clock = fc.tuple(fc.oneof(fc.constantFrom(0, 23), fc.integer({ min: 0, max: 24 })), fc.oneof(fc.constantFrom(0, 59), fc.integer({ min: 0, max: 60 })), fc.oneof(fc.constantFrom(0, 59, 60), fc.integer({ min: 0, max: 60 })));
const fraction = fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined });
const offset = fc.oneof(
  fc.constantFrom('Z', 'z', '+00:00', '-00:00', '+23:59', '-23:59', '-12:00', '+14:00', '+24:00', '-00:60'),
  fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([s, h, m]) => `${s}${pad(h, 2)}:${pad(m, 2)}`),
);
const dateText = fc.tuple(year, month, day).map(([y, m, d]) => `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`);
const timeText = fc.tuple(clock, fraction).map(([[h, mi, s], f]) => `${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}${f === undefined ? '' : `.${f}`}`);
const dateTimeText = fc.tuple(dateText, fc.constantFrom('T', 't'), timeText, offset).map(([d, sep, tm, z]) => `${d}${sep}${tm}${z}`);

/** Encodes `{ [field]: text }`: the bytes, or undefined when ingress refuses it (CEG_INVALID_DATA naming the field). */
function ingress(field: string, text: unknown): Buffer | undefined {
  try {
    return encodeAvro(t, { [field]: text });
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_INVALID_DATA');
    expect((err as GatewayError).details.field).toBe(`/${field}`);
    return undefined;
  }
}

/** The instant of an RFC 3339 text in nanoseconds since the epoch. */
const instant = (text: string): bigint => {
  const i = parseDateTime(text);
  if (typeof i === 'string') throw new Error(i);
  return BigInt(i.seconds) * 1_000_000_000n + BigInt(i.nanos);
};

describe('whatever ingress accepts, the decoder reads back (generated texts at the edges)', () => {
  it.each([['ms'], ['us']])('timestamp %s: refused, or the same instant back in UTC', (field) => {
    fc.assert(
      fc.property(dateTimeText, (text) => {
        const bytes = ingress(field, text);
        if (bytes === undefined) return;
        const back = (decodeAvro(t, bytes) as Record<string, unknown>)[field];
        expect(typeof back).toBe('string');
        expect(back as string).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.(\d{3}|\d{6})Z$/);
        expect(instant(back as string)).toBe(instant(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('date: refused, or the same date back', () => {
    fc.assert(
      fc.property(dateText, (text) => {
        const bytes = ingress('day', text);
        if (bytes !== undefined) expect(decodeAvro(t, bytes)).toMatchObject({ day: text });
      }),
      { numRuns: 2000 },
    );
  });

  it.each([['tm', 3], ['tu', 6]])('time %s: refused, or the same time of day back', (field, digits) => {
    fc.assert(
      fc.property(timeText, (text) => {
        const bytes = ingress(field, text);
        if (bytes === undefined) return;
        const back = (decodeAvro(t, bytes) as Record<string, unknown>)[field] as string;
        const [whole, frac = ''] = text.split('.');
        // Accepted only when the digits past the unit are zeros (precision is never lost).
        expect(frac.padEnd(9, '0').slice(digits)).toMatch(/^0*$/);
        expect(back).toBe(`${whole}.${frac.padEnd(9, '0').slice(0, digits)}`);
      }),
      { numRuns: 2000 },
    );
  });

  it.each([['lms'], ['lus']])('local-timestamp %s (no text form: a long): refused, or the same long back', (field) => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String), dateTimeText), (v) => {
        const bytes = ingress(field, v);
        if (bytes === undefined) return;
        const back = (decodeAvro(t, bytes) as Record<string, unknown>)[field];
        expect(String(back)).toBe(String(typeof v === 'string' ? BigInt(v) : v));
      }),
      { numRuns: 1000 },
    );
  });
});
