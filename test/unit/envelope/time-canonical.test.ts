import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { canonicalString, isRfc3339Timestamp, parseAttribute, tryParseAttribute } from '../../../src/envelope/index.js';

describe('isRfc3339Timestamp', () => {
  it('accepts instants with an offset, fractions up to nine digits, years from 0001, offsets up to ±18:00', () => {
    for (const ok of [
      '2024-05-01T12:00:00Z',
      '2024-05-01T14:30:00+02:30',
      '2024-05-01T07:00:00-05:00',
      '2024-05-01T12:00:00.1Z',
      '2024-05-01T12:00:00.123999Z',
      '2024-05-01T12:00:00.123456789Z',
      '0050-01-01T00:00:00Z',
      '0001-01-01T00:00:00Z',
      '2000-02-29T00:00:00Z',
      '1900-02-28T23:59:59-18:00',
    ]) {
      expect(isRfc3339Timestamp(ok), ok).toBe(true);
    }
  });

  it('refuses impossible dates and missing offsets', () => {
    for (const bad of ['2024-04-31T00:00:00Z', '2100-02-29T00:00:00Z', '2024-05-01T12:60:00Z', '2024-05-01T12:00:61Z', '2024-05-01T12:00:00+24:00', '2024-05-01T12:00Z', '2024-05-01T12:00:00.Z']) {
      expect(isRfc3339Timestamp(bad), bad).toBe(false);
    }
  });

  it.each([
    '2024-05-01T12:00:00Zx',
    '2024-05-01T12:00:00+02:00x',
    '2024-05-01T12:00:00+0200',
    '2024-05-01T12:00:00+02',
    '+2024-05-01T12:00:00Z',
    '2024-5-01T12:00:00Z',
    '2024-05-01T12:00:00,5Z',
    '2024-05-01T12:00:00.5.5Z',
    '2024-05-01T12:00:00+02:60',
    '2024-05-01T1a:00:00Z',
    '2024-05-01X12:00:00Z',
    '2024/05/01T12:00:00Z',
    '',
  ])('refuses %j', (text) => {
    expect(isRfc3339Timestamp(text)).toBe(false);
  });

  // Issue 12: what the gateway forwards verbatim must be readable by mainstream SDKs (the Java
  // SDK's Kafka deserializer cannot skip a record whose time it cannot parse).
  it.each([
    ['a leap second (Java refuses second 60)', '2016-12-31T23:59:60Z'],
    ['second 60 outside a leap second', '2024-05-01T12:00:60Z'],
    ['more than nine fraction digits (Java: nanoseconds)', '2024-05-01T12:00:00.1234567891Z'],
    ['year 0000 (Python and .NET start at year 1)', '0000-01-01T00:00:00Z'],
    ['a lower-case t (Go reads only T)', '2024-05-01t12:00:00Z'],
    ['a lower-case z (Go reads only Z)', '2024-05-01T12:00:00z'],
    ['an offset beyond ±18:00 (Java ZoneOffset)', '2024-05-01T12:00:00+18:30'],
  ])('time a mainstream SDK cannot read is refused: %s', (_why, text) => {
    expect(isRfc3339Timestamp(text)).toBe(false);
  });

  it('the instant in UTC stays within years 0001–9999 (.NET DateTimeOffset refuses the rest)', () => {
    // At the edges, against the instant as JavaScript computes it (which reads years 0 and 10000).
    const offsets = ['Z', '+00:01', '-00:01', '+01:00', '-01:00', '+18:00', '-18:00', '+05:30', '-09:45'];
    const times = ['00:00:00', '00:00:59.999', '00:01:00', '12:00:00', '17:59:59', '18:00:00', '22:59:59', '23:59:00', '23:59:59.999999999'];
    for (const date of ['0001-01-01', '9999-12-31', '0001-01-02', '9999-12-30']) {
      for (const t of times) {
        for (const o of offsets) {
          const text = `${date}T${t}${o}`;
          const ms = Date.parse(text.replace(/(\.\d{3})\d+/, '$1'));
          const year = new Date(ms).getUTCFullYear();
          expect(isRfc3339Timestamp(text), `${text} (UTC year ${year})`).toBe(year >= 1 && year <= 9999);
        }
      }
    }
  });
});

describe('canonicalString / parseAttribute', () => {
  it('writes booleans and integers canonically', () => {
    expect(canonicalString(true)).toBe('true');
    expect(canonicalString(false)).toBe('false');
    expect(canonicalString(-2147483648)).toBe('-2147483648');
    expect(canonicalString(42)).toBe('42');
    expect(canonicalString('a b')).toBe('a b');
  });

  it('reads schemaversion as an Integer and keeps unknown extensions as String', () => {
    expect(parseAttribute('schemaversion', '3')).toBe(3);
    expect(parseAttribute('schemaversion', '-7')).toBe(-7);
    expect(parseAttribute('myext', '3')).toBe('3');
    expect(parseAttribute('myflag', 'true')).toBe('true');
    expect(parseAttribute('time', '2024-05-01T12:00:00Z')).toBe('2024-05-01T12:00:00Z');
  });

  it.each(['3.0', '+3', '03', '', ' 3', '1e3', '2147483648', '99999999999999999999'])('refuses schemaversion %j naming the attribute', (text) => {
    try {
      parseAttribute('schemaversion', text);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      const ge = err as GatewayError;
      expect(ge.code).toBe('CEG_INVALID_ATTRIBUTE');
      expect(ge.retriable).toBe(false);
      expect(ge.details.attribute).toBe('schemaversion');
    }
  });

  it('round-trips every Integer edge', () => {
    for (const n of [0, 1, -1, 2147483647, -2147483648]) expect(parseAttribute('schemaversion', canonicalString(n))).toBe(n);
  });

  it('tryParseAttribute reports instead of throwing', () => {
    expect(tryParseAttribute('schemaversion', 'x')).toMatchObject({ ok: false });
    expect(tryParseAttribute('schemaversion', '12')).toEqual({ ok: true, value: 12 });
  });
});
