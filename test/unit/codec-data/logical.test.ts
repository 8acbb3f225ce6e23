import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { avroToJson, avroType, decodeAvro, encodeAvro, jsonToAvro } from '../../../src/codec/data/index.js';
import { formatTimestamp } from '../../../src/codec/data/logical.js';
import { record, violationsOf } from './helpers.js';

const t = avroType(
  record([
    { name: 'ms', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'us', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'day', type: { type: 'int', logicalType: 'date' } },
    { name: 'tm', type: { type: 'int', logicalType: 'time-millis' } },
    { name: 'tu', type: { type: 'long', logicalType: 'time-micros' } },
    { name: 'id', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 8, scale: 5 } },
    { name: 'fx', type: { type: 'fixed', name: 'Dec', size: 4, logicalType: 'decimal', precision: 9, scale: 2 } },
  ]),
);

const good = {
  ms: '2022-03-15T12:00:00.250+02:00',
  us: '2022-03-15T10:00:00.123456Z',
  day: '2024-02-29',
  tm: '23:59:59.999',
  tu: '00:00:01.000001',
  id: '78b8fd47-3ff3-4881-9419-7bfe84ce89cb',
  price: '123.4',
  fx: '-12.5',
};

describe('logical types: JSON → Avro values', () => {
  it('maps each logical type to its Avro value', () => {
    const v = jsonToAvro(t, good) as Record<string, unknown>;
    expect(v['ms']).toBe(Date.UTC(2022, 2, 15, 10, 0, 0, 250));
    expect(v['us']).toBe(Date.UTC(2022, 2, 15, 10, 0, 0, 123) * 1000 + 456);
    expect(v['day']).toBe(19782);
    expect(v['tm']).toBe(86_399_999);
    expect(v['tu']).toBe(1_000_001);
    expect(v['id']).toBe(good.id);
    // 123.4 at scale 5 → unscaled 12340000 = 0xBC4B20, plus a sign byte (two's complement, top bit set)
    expect((v['price'] as Buffer).toString('hex')).toBe('00bc4b20');
    // -12.5 at scale 2 → -1250, sign-extended to 4 bytes
    expect((v['fx'] as Buffer).toString('hex')).toBe('fffffb1e');
  });

  it('maps back to natural JSON: UTC Z, 3/6 fraction digits, decimals with their scale', () => {
    expect(decodeAvro(t, encodeAvro(t, good))).toEqual({
      ms: '2022-03-15T10:00:00.250Z',
      us: '2022-03-15T10:00:00.123456Z',
      day: '2024-02-29',
      tm: '23:59:59.999',
      tu: '00:00:01.000001',
      id: good.id,
      price: '123.40000',
      fx: '-12.50',
    });
  });

  it('keeps timestamps before the epoch and at the range ends exact', () => {
    const one = (ms: string, us: string) => avroToJson(t, jsonToAvro(t, { ...good, ms, us })) as Record<string, unknown>;
    expect(one('1969-12-31T23:59:59.999Z', '0001-01-01T00:00:00.000001Z')).toMatchObject({
      ms: '1969-12-31T23:59:59.999Z',
      us: '0001-01-01T00:00:00.000001Z',
    });
    const far = jsonToAvro(t, { ...good, us: '9999-12-31T23:59:59.999999Z' }) as Record<string, unknown>;
    expect(far['us']).toBe(253402300799999999n);
    expect((avroToJson(t, far) as Record<string, unknown>)['us']).toBe('9999-12-31T23:59:59.999999Z');
  });

  it('refuses timestamps without offset, with lost precision, or impossible dates', () => {
    const cases: [string, unknown, RegExp][] = [
      ['/ms', '2022-03-15T12:00:00', /offset/],
      ['/ms', '2022-03-15T12:00:00.0001Z', /finer than milliseconds/],
      ['/us', '2022-03-15T12:00:00.0000001Z', /finer than microseconds/],
      ['/ms', '2022-02-30T12:00:00Z', /day must be 01–28/],
      ['/ms', '2022-03-15T24:00:00Z', /hour/],
      ['/ms', '2016-12-31T23:59:60Z', /leap second/],
      ['/ms', '2022-03-15T12:00:00+24:00', /offset/],
      ['/ms', 1647345600000, /RFC 3339/],
      ['/day', '2023-02-29', /day must be 01–28/],
      ['/day', '2023-2-1', /YYYY-MM-DD/],
      ['/tm', '24:00:00', /hour/],
      ['/tm', '10:00:00.0005', /finer than milliseconds/],
      ['/id', 'not-a-uuid', /UUID/],
      ['/price', 1.5, /decimal string/],
      ['/price', '1.123456', /more than 5 fraction digits/],
      ['/price', '1234.5', /more than 8 digits/],
      ['/price', '1e5', /digits/],
      ['/fx', '10000000.00', /more than 9 digits/],
    ];
    for (const [field, value, reason] of cases) {
      const v = violationsOf(() => jsonToAvro(t, { ...good, [field.slice(1)]: value }));
      expect(v, `${field} = ${String(value)}`).toHaveLength(1);
      expect(v[0]?.field).toBe(field);
      expect(v[0]?.reason).toMatch(reason);
    }
  });

  it('accepts lowercase t/z, zero offsets and redundant zeros of the scale', () => {
    const v = jsonToAvro(t, { ...good, ms: '2022-03-15t10:00:00.000-00:00', price: '-0.00100', fx: '0' }) as Record<string, unknown>;
    expect(v['ms']).toBe(Date.UTC(2022, 2, 15, 10));
    expect(avroToJson(t, v)).toMatchObject({ price: '-0.00100', fx: '0.00' });
  });

  it('encodes decimals as minimal two\'s complement (Java BigInteger.toByteArray)', () => {
    const d = avroType(record([{ name: 'p', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 0 } }], 'D0'));
    const hex = (p: string) => ((jsonToAvro(d, { p }) as Record<string, Buffer>)['p'] as Buffer).toString('hex');
    expect([hex('0'), hex('-1'), hex('127'), hex('128'), hex('-128'), hex('-129'), hex('65535')]).toEqual(['00', 'ff', '7f', '0080', '80', 'ff7f', '00ffff']);
    for (const p of ['0', '-1', '128', '-129', '9999999999', '-9999999999']) expect(avroToJson(d, jsonToAvro(d, { p }))).toEqual({ p });
  });
});

describe('timestamps as RFC 3339 text (property)', () => {
  // Years 0000–9999, as the Date object writes them (toISOString), for any millisecond and in any
  // order: the formatter keeps the last day it wrote, so a day repeated, left and come back to is covered.
  const ms = fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }); // 0000-01-01T00:00:00.000Z … 9999-12-31T23:59:59.999Z
  it('writes timestamp-millis as Date#toISOString does, and timestamp-micros with the 3 extra digits', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(ms, fc.integer({ min: 0, max: 999 })), { minLength: 1, maxLength: 20 }), (values) => {
        for (const [v, extra] of values) {
          const iso = new Date(v).toISOString();
          expect(formatTimestamp(v, false)).toBe(iso);
          expect(formatTimestamp(BigInt(v), false)).toBe(iso);
          const micros = BigInt(v) * 1000n + BigInt(extra);
          const expected = `${iso.slice(0, -1)}${String(extra).padStart(3, '0')}Z`;
          expect(formatTimestamp(micros, true)).toBe(expected);
          if (Number.isSafeInteger(Number(micros))) expect(formatTimestamp(Number(micros), true)).toBe(expected);
        }
      }),
    );
  });
});
