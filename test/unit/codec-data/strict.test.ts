import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { avroToJson, avroType, decodeAvro, encodeAvro, jsonToAvro, MAX_LISTED_VIOLATIONS } from '../../../src/codec/data/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { loadCatalog } from '../../../src/catalog/index.js';
import { record, violationsOf } from './helpers.js';

const catalog = loadCatalog();
const chart = avroType(catalog.byName('ChartDataReady')!.schema);
const signal = avroType(catalog.byName('StrategySignal')!.schema);

const bar = { barKey: 'EUR-USD_H4__22031512', openAt: '2022-03-15T12:00:00Z', open: '1.1', high: '1.2', low: '1.0', close: '1.15', volume: 10 };
const chartJson = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__22031512', bars: [bar], readyAt: '2022-03-15T16:00:00.000001Z' };
const signalJson = {
  instrument: 'EUR/USD',
  timeframe: 'H4',
  barKey: 'EUR-USD_H4__22031512',
  strategy: 'breakout',
  signalId: 'b785f117-3e61-4864-89c3-4accf13140c2',
  side: 'SELL',
  price: '1.23450',
  generatedAt: '2022-03-15T16:00:00Z',
};

describe('strict records', () => {
  it('lists every problem with its JSON pointer, nested ones included', () => {
    const v = violationsOf(() =>
      jsonToAvro(chart, {
        ...chartJson,
        timeframe: 4,
        extra: true,
        bars: [bar, { ...bar, close: 1.15, volume: 1.5, colour: 'red' }],
        series: { sma: [1, 'x'] },
      }),
    );
    expect(v.map((x) => x.field)).toEqual(['/timeframe', '/bars/1/close', '/bars/1/volume', '/bars/1/colour', '/series/sma/1', '/extra']);
    expect(v.find((x) => x.field === '/extra')?.reason).toMatch(/unknown field/);
  });

  it('refuses missing required fields and fills defaults and nullable fields', () => {
    const v = violationsOf(() => jsonToAvro(signal, { ...signalJson, price: undefined, side: undefined }));
    expect(v).toEqual([
      { field: '/side', reason: 'required field is missing' },
      { field: '/price', reason: 'required field is missing' },
    ]);
    const out = decodeAvro(chart, encodeAvro(chart, chartJson)) as Record<string, unknown>;
    expect(out['series']).toEqual({});
    expect(decodeAvro(signal, encodeAvro(signal, signalJson))).toMatchObject({ stopLoss: null, confidence: null, validUntil: null });
  });

  it('refuses a non-object at the top with field ""', () => {
    expect(violationsOf(() => jsonToAvro(signal, [1]))).toEqual([{ field: '', reason: 'expected an object (caishen.trading.StrategySignal)' }]);
    expect(violationsOf(() => jsonToAvro(signal, null))[0]?.field).toBe('');
  });

  it('escapes member names in pointers (RFC 6901)', () => {
    const v = violationsOf(() => jsonToAvro(signal, { ...signalJson, 'a/b~c': 1 }));
    expect(v).toEqual([{ field: '/a~1b~0c', reason: 'unknown field (not in caishen.trading.StrategySignal)' }]);
  });

  it('does not read inherited members as fields', () => {
    const t = avroType(record([{ name: 'constructor', type: 'string' }]));
    expect(violationsOf(() => jsonToAvro(t, {}))).toEqual([{ field: '/constructor', reason: 'required field is missing' }]);
  });

  it('checks enum symbols, int range, booleans, strings, arrays and maps', () => {
    const t = avroType(
      record([
        { name: 'e', type: { type: 'enum', name: 'E', symbols: ['A', 'B'] } },
        { name: 'i', type: 'int' },
        { name: 'b', type: 'boolean' },
        { name: 's', type: 'string' },
        { name: 'a', type: { type: 'array', items: 'int' } },
        { name: 'm', type: { type: 'map', values: 'string' } },
      ]),
    );
    const ok = { e: 'B', i: -2147483648, b: false, s: '', a: [1, 2], m: { k: 'v' } };
    expect(decodeAvro(t, encodeAvro(t, ok))).toEqual(ok);
    const v = violationsOf(() => jsonToAvro(t, { e: 'C', i: 2147483648, b: 'true', s: 1, a: { 0: 1 }, m: [] }));
    expect(v).toEqual([
      { field: '/e', reason: 'expected one of A, B' },
      { field: '/i', reason: 'integer out of the 32-bit int range' },
      { field: '/b', reason: 'expected a boolean' },
      { field: '/s', reason: 'expected a string' },
      { field: '/a', reason: 'expected an array' },
      { field: '/m', reason: 'expected an object (map)' },
    ]);
    expect(violationsOf(() => jsonToAvro(t, { ...ok, i: 1.5 }))[0]?.reason).toMatch(/fraction/);
    // From a JavaScript caller (no JSON has them): said as what they are, not "a fraction".
    expect(violationsOf(() => jsonToAvro(t, { ...ok, i: Number.NaN }))[0]?.reason).toBe('expected an integer (int), got NaN');
    expect(violationsOf(() => jsonToAvro(t, { ...ok, i: -Infinity }))[0]?.reason).toBe('expected an integer (int), got -Infinity');
  });

  it('caps the listed violations and reports the total', () => {
    const many = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`x${i}`, i]));
    try {
      jsonToAvro(signal, { ...signalJson, ...many });
      expect.unreachable();
    } catch (err) {
      const e = err as GatewayError;
      expect((e.details['violations'] as unknown[]).length).toBe(MAX_LISTED_VIOLATIONS);
      expect(e.details['violationCount']).toBe(150);
      expect(e.message).toContain('(+145 more)');
    }
  });
});

describe('longs', () => {
  const t = avroType(record([{ name: 'n', type: 'long' }, { name: 'o', type: ['null', 'long'], default: null }]));

  it('are JSON numbers when safe and decimal strings beyond 2^53, both ways, exactly', () => {
    for (const [input, out] of [
      [9007199254740991, 9007199254740991],
      ['9007199254740993', '9007199254740993'],
      ['-9223372036854775808', '-9223372036854775808'],
      ['9223372036854775807', '9223372036854775807'],
      ['42', 42],
      [-1, -1],
      [0, 0],
    ] as const) {
      expect(decodeAvro(t, encodeAvro(t, { n: input, o: input }))).toEqual({ n: out, o: out });
    }
  });

  it('refuse a JSON number that is not a safe integer, and out-of-range strings', () => {
    expect(violationsOf(() => jsonToAvro(t, { n: 2 ** 53 + 2 }))).toEqual([
      { field: '/n', reason: 'integer beyond ±(2^53 − 1) must be given as a decimal string to stay exact' },
    ]);
    expect(violationsOf(() => jsonToAvro(t, { n: '9223372036854775808' }))[0]?.reason).toMatch(/64-bit long range/);
    expect(violationsOf(() => jsonToAvro(t, { n: '01' }))[0]?.reason).toMatch(/decimal string/);
    expect(violationsOf(() => jsonToAvro(t, { n: 1.5 }))[0]?.reason).toMatch(/fraction/);
    expect(violationsOf(() => jsonToAvro(t, { n: Infinity }))[0]?.reason).toBe('expected an integer (long), got Infinity');
    expect(violationsOf(() => jsonToAvro(t, { n: Number.NaN }))[0]?.reason).toBe('expected an integer (long), got NaN');
  });

  it('encode to the standard zig-zag varint', () => {
    expect(encodeAvro(t, { n: 1, o: null }).toString('hex')).toBe('0200');
    expect(encodeAvro(t, { n: -1, o: null }).toString('hex')).toBe('0100');
    expect(encodeAvro(t, { n: '9223372036854775807', o: null }).toString('hex')).toBe('feffffffffffffffff0100');
  });
});

describe('unions, floats, bytes', () => {
  const t = avroType(
    record([
      { name: 'u', type: ['null', 'string', 'long', { type: 'record', name: 'P', fields: [{ name: 'x', type: 'int' }] }] },
      { name: 'f', type: 'float' },
      { name: 'd', type: 'double' },
      { name: 'by', type: 'bytes' },
      { name: 'fx', type: ['null', { type: 'fixed', name: 'F2', size: 2 }], default: null },
    ]),
  );
  const base = { u: null, f: 1.5, d: -0.25, by: 'AAEC', fx: 'AQI=' };

  it('accept bare values (first matching branch) and the Avro JSON wrapper; write the wrapper', () => {
    expect(decodeAvro(t, encodeAvro(t, base))).toEqual({ ...base, by: 'AAEC' });
    expect((decodeAvro(t, encodeAvro(t, { ...base, u: 'text' })) as Record<string, unknown>)['u']).toEqual({ string: 'text' });
    expect((decodeAvro(t, encodeAvro(t, { ...base, u: 7 })) as Record<string, unknown>)['u']).toEqual({ long: 7 });
    expect((decodeAvro(t, encodeAvro(t, { ...base, u: { long: '8' } })) as Record<string, unknown>)['u']).toEqual({ long: 8 });
    expect((decodeAvro(t, encodeAvro(t, { ...base, u: { x: 3 } })) as Record<string, unknown>)['u']).toEqual({ 'test.P': { x: 3 } });
    expect((decodeAvro(t, encodeAvro(t, { ...base, u: { P: { x: 4 } } })) as Record<string, unknown>)['u']).toEqual({ 'test.P': { x: 4 } });
  });

  it('take the null branch named like the others, {"null": null}, as null in any union with a null branch', () => {
    expect(jsonToAvro(t, { ...base, u: { null: null }, fx: { null: null } })).toMatchObject({ u: null, fx: null });
    expect(encodeAvro(t, { ...base, u: { null: null }, fx: { null: null } })).toEqual(encodeAvro(t, { ...base, u: null, fx: null }));
    expect(violationsOf(() => jsonToAvro(t, { ...base, u: { null: 1 } }))[0]).toEqual({ field: '/u/null', reason: 'the null branch holds only null' });
    expect(violationsOf(() => jsonToAvro(t, { ...base, fx: { null: 'AQI=' } }))[0]?.field).toBe('/fx/null');
    // Without a null branch it names no branch.
    const noNull = avroType(record([{ name: 'v', type: ['string', 'long'] }]));
    expect(violationsOf(() => jsonToAvro(noNull, { v: { null: null } }))[0]?.field).toBe('/v');
  });

  it('property: on an optional field the bare value, the wrapper, null and {"null": null} are read alike', () => {
    const opt = avroType(record([{ name: 'o', type: ['null', 'string'], default: null }]));
    fc.assert(
      fc.property(fc.option(fc.string(), { nil: null }), (v) => {
        const bare = encodeAvro(opt, { o: v });
        expect(encodeAvro(opt, { o: v === null ? { null: null } : { string: v } })).toEqual(bare);
      }),
    );
  });

  it('a lone map or record branch with a member "null" keeps {"null": …} as its own value', () => {
    const m = avroType(record([{ name: 'm', type: ['null', { type: 'map', values: ['null', 'long'] }] }]));
    expect(jsonToAvro(m, { m: { null: null } })).toEqual({ m: { map: { null: null } } });
    const r = avroType(record([{ name: 'r', type: ['null', { type: 'record', name: 'N', fields: [{ name: 'null', type: ['null', 'long'] }] }] }]));
    expect(jsonToAvro(r, { r: { null: null } })).toMatchObject({ r: { 'test.N': { null: null } } });
  });

  it('refuse a value no branch takes, and a wrapped value of the wrong type', () => {
    expect(violationsOf(() => jsonToAvro(t, { ...base, u: true }))[0]).toEqual({
      field: '/u',
      reason: 'matches no branch of the union (null, string, long, test.P); name the branch as {"<branch>": value}',
    });
    expect(violationsOf(() => jsonToAvro(t, { ...base, u: { long: 'x' } }))[0]?.field).toBe('/u/long');
  });

  it('map NaN and infinities to strings and back, and check the float range', () => {
    expect(decodeAvro(t, encodeAvro(t, { ...base, f: 'NaN', d: '-Infinity' }))).toMatchObject({ f: 'NaN', d: '-Infinity' });
    expect(violationsOf(() => jsonToAvro(t, { ...base, f: 1e39 }))[0]?.reason).toMatch(/float range/);
    expect(violationsOf(() => jsonToAvro(t, { ...base, d: 'inf' }))[0]?.reason).toMatch(/double/);
  });

  it('take bytes and fixed as padded base64 and check the fixed size', () => {
    const v = jsonToAvro(t, base) as Record<string, unknown>;
    expect((v['by'] as Buffer).toString('hex')).toBe('000102');
    expect(violationsOf(() => jsonToAvro(t, { ...base, by: 'AAE' }))[0]?.reason).toMatch(/base64/);
    expect(violationsOf(() => jsonToAvro(t, { ...base, by: 'AA-_' }))[0]?.reason).toMatch(/base64/);
    // RFC 4648 §3.5: non-zero pad bits (AAF= decodes as AAE= does) are refused, naming the canonical text.
    expect(violationsOf(() => jsonToAvro(t, { ...base, by: 'AAF=' }))[0]).toEqual({ field: '/by', reason: expect.stringContaining('AAE=') as string });
    expect(violationsOf(() => jsonToAvro(t, { ...base, by: 'AB==' }))[0]?.reason).toMatch(/canonical/);
    expect((jsonToAvro(t, { ...base, by: 'AAE=' }) as Record<string, Buffer>)['by']!.toString('hex')).toBe('0001');
    expect(violationsOf(() => jsonToAvro(t, { ...base, fx: 'AQID' }))[0]).toEqual({ field: '/fx', reason: 'expected exactly 2 bytes, got 3' });
  });
});

describe('avroToJson on values that do not fit', () => {
  it('names the field', () => {
    try {
      avroToJson(signal, { ...signalJson, side: 'UP' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).details['field']).toBe('/side');
    }
  });
});
