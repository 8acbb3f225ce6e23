/**
 * Avro strings must be UTF-8 (Avro 1.11 §"Primitive Types"), so every string that natural JSON
 * puts into an Avro `string` (map keys and union branches included) must be well-formed UTF-16: a
 * lone surrogate (from a `\ud800` escape) is refused naming its field, never written as CESU-8
 * bytes. Avro `double`/`float` take any finite JSON number: the safe-integer rule is for
 * `int`/`long` only.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { avroToJson, avroType, decodeAvro, encodeAvro, jsonToAvro } from '../../../src/codec/data/index.js';
import { parseStructuredEvent, readJsonData } from '../../../src/codec/json/index.js';
import { loadCatalog, partitionKey } from '../../../src/catalog/index.js';
import { ViolationCollector, validateEnvelope } from '../../../src/envelope/index.js';
import type { Envelope } from '../../../src/envelope/index.js';
import { record, violationsOf } from './helpers.js';

const inner = { type: 'record', name: 'Inner', fields: [{ name: 't', type: 'string' }] };
const t = avroType(
  record([
    { name: 's', type: 'string' },
    { name: 'nested', type: inner },
    { name: 'list', type: { type: 'array', items: 'string' } },
    { name: 'tags', type: { type: 'map', values: 'string' } },
    { name: 'counts', type: { type: 'map', values: 'int' } },
    { name: 'inners', type: { type: 'array', items: 'Inner' } },
    { name: 'opt', type: ['null', 'string'], default: null },
    { name: 'multi', type: ['null', 'string', 'double'], default: null },
    { name: 'id', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'd', type: 'double' },
    { name: 'f', type: 'float' },
    { name: 'n', type: 'long' },
    { name: 'i', type: 'int' },
  ]),
);

const base = {
  s: 'a',
  nested: { t: 'b' },
  list: ['c', 'd'],
  tags: { k: 'e' },
  counts: { k: 1 },
  inners: [{ t: 'f' }],
  opt: 'g',
  multi: 'h',
  id: 'b785f117-3e61-4864-89c3-4accf13140c2',
  d: 0.5,
  f: 0.5,
  n: 1,
  i: 1,
};

/** RFC 6901 reference token. */
const token = (name: string): string => name.replaceAll('~', '~0').replaceAll('/', '~1');

/** Where an ill-formed string goes: the data with it, and the pointer the refusal must name. */
const PLACES: readonly ((bad: string) => { readonly data: object; readonly field: string })[] = [
  (bad) => ({ data: { ...base, s: bad }, field: '/s' }),
  (bad) => ({ data: { ...base, nested: { t: bad } }, field: '/nested/t' }),
  (bad) => ({ data: { ...base, list: ['ok', bad] }, field: '/list/1' }),
  (bad) => ({ data: { ...base, tags: { k: 'ok', q: bad } }, field: '/tags/q' }),
  (bad) => ({ data: { ...base, tags: { k: 'ok', [bad]: 'v' } }, field: `/tags/${token(bad)}` }),
  (bad) => ({ data: { ...base, counts: { [bad]: 2 } }, field: `/counts/${token(bad)}` }),
  (bad) => ({ data: { ...base, inners: [{ t: 'x' }, { t: bad }] }, field: '/inners/1/t' }),
  (bad) => ({ data: { ...base, opt: bad }, field: '/opt' }),
  (bad) => ({ data: { ...base, opt: { string: bad } }, field: '/opt/string' }),
  (bad) => ({ data: { ...base, multi: bad }, field: '/multi' }),
  (bad) => ({ data: { ...base, multi: { string: bad } }, field: '/multi/string' }),
];

/** Well-formed text: any code points, astral ones (emoji) included. */
const wellFormed = fc.string({ unit: 'grapheme', maxLength: 12 });

/** A well-formed string with one lone surrogate put between two of its code points (so it cannot pair). */
const illFormed = fc
  .tuple(wellFormed, fc.integer({ min: 0xd800, max: 0xdfff }), fc.nat())
  .map(([text, unit, at]) => {
    const points = Array.from(text);
    const cut = at % (points.length + 1);
    return points.slice(0, cut).join('') + String.fromCharCode(unit) + points.slice(cut).join('');
  });

describe('Avro strings from JSON are well-formed Unicode', () => {
  it('a lone surrogate anywhere in any string field is refused, naming that field by JSON pointer', () => {
    fc.assert(
      fc.property(illFormed, fc.nat(PLACES.length - 1), (bad, place) => {
        expect(/\p{Cs}/u.test(bad)).toBe(true);
        const { data, field } = PLACES[place]!(bad);
        const v = violationsOf(() => encodeAvro(t, data));
        expect(v).toEqual([{ field, reason: expect.stringMatching(/lone surrogate/) }]);
      }),
      { numRuns: 500 },
    );
  });

  it('the tester’s case: "EUR\\ud800" in StrategySignal.instrument, and a reversed pair', () => {
    const signal = avroType(loadCatalog().byName('StrategySignal')!.schema);
    const data = {
      instrument: 'EUR\ud800',
      timeframe: 'H4',
      barKey: 'EUR-USD_H4__22031512',
      strategy: '\udc00\ud800',
      signalId: 'b785f117-3e61-4864-89c3-4accf13140c2',
      side: 'SELL',
      price: '1.23450',
      generatedAt: '2022-03-15T16:00:00Z',
    };
    expect(violationsOf(() => jsonToAvro(signal, data))).toEqual([
      { field: '/instrument', reason: 'string is not well-formed Unicode: lone surrogate U+D800 at index 3 (Avro strings are UTF-8, which cannot encode it)' },
      { field: '/strategy', reason: 'string is not well-formed Unicode: lone surrogate U+DC00 at index 0 (Avro strings are UTF-8, which cannot encode it)' },
    ]);
  });

  it('a record key built from data is ASCII whatever the data holds (ingress encodes the data, and so refuses it, first)', () => {
    const kind = loadCatalog().byName('StrategySignal')!;
    expect(partitionKey(kind, { instrument: 'EUR\ud800', timeframe: 'H4' })).toBe('EUR-_H4');
    fc.assert(
      fc.property(illFormed.filter((x) => x !== ''), wellFormed.filter((x) => x !== ''), (a, b) => {
        expect(partitionKey(kind, { instrument: a, timeframe: b })).toMatch(/^[A-Za-z0-9_-]+$/);
      }),
    );
  });

  it('well-formed strings, astral characters included, round-trip exactly and are written as UTF-8', () => {
    fc.assert(
      fc.property(wellFormed, wellFormed.filter((k) => k !== '__proto__'), fc.array(wellFormed, { maxLength: 3 }), (a, b, list) => {
        const data = { ...base, s: `${a}😀`, nested: { t: b }, list, tags: { [`${a}🎉`]: b }, counts: { [b]: 3 }, inners: list.map((x) => ({ t: x })), opt: a, multi: { string: b } };
        const bytes = encodeAvro(t, data);
        // The UTF-8 of every string is in the body, unchanged.
        expect(bytes.includes(Buffer.from(`${a}😀`, 'utf8'))).toBe(true);
        expect(decodeAvro(t, bytes)).toEqual(data);
      }),
      { numRuns: 300 },
    );
  });
});

/** JSON text read as ingress reads data (codec/json readJsonData: binary-mode bodies, `data_base64`), or the refusal. */
function readData(text: string): unknown {
  const out = new ViolationCollector();
  const read = readJsonData(Buffer.from(text), '/data', 'application/json', out);
  if (read === undefined) throw new Error(out.items.map((v) => `${v.field ?? ''}: ${v.reason}`).join('; '));
  return read.value;
}

const FOUR_DOUBLES = ['1e16', '-1e20', '1e300', '1.7976931348623157e308', '10000000000000000.0', '9007199254740993', '-9223372036854775808', '5e-324', '0.1', '-0'];

describe('Avro double and float take any finite JSON number', () => {
  it.each(FOUR_DOUBLES)('double %s: JSON → Avro → JSON keeps the value', (literal) => {
    const json = readData(`{"s":"a","nested":{"t":"b"},"list":[],"tags":{},"counts":{},"inners":[],"id":"b785f117-3e61-4864-89c3-4accf13140c2","d":${literal},"f":1,"n":1,"i":1,"multi":${literal}}`);
    const out = decodeAvro(t, encodeAvro(t, json)) as Record<string, unknown>;
    expect(Object.is(out['d'], Number(literal))).toBe(true);
    expect(out['multi']).toEqual({ double: Number(literal) });
    expect(JSON.parse(JSON.stringify(out['d']))).toBe(Number(literal) === 0 ? 0 : Number(literal));
  });

  it('large integral doubles round-trip exactly (property)', () => {
    const bigIntegral = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => Number.isInteger(x) && Math.abs(x) >= 2 ** 53);
    fc.assert(
      fc.property(bigIntegral, (x) => {
        const text = JSON.stringify({ ...base, d: x });
        const back = JSON.parse(JSON.stringify(decodeAvro(t, encodeAvro(t, readData(text))))) as Record<string, unknown>;
        expect(back['d']).toBe(x);
      }),
      { numRuns: 500 },
    );
  });

  it('any finite double round-trips exactly (property)', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
        // JSON text has no -0 (JSON.stringify writes 0): the value in the text is what must come back.
        const text = JSON.stringify({ ...base, d: x, multi: x });
        const sent = x === 0 ? 0 : x;
        const out = decodeAvro(t, encodeAvro(t, readData(text))) as Record<string, unknown>;
        expect(out['multi']).toEqual({ double: sent });
        expect(Object.is(out['d'], sent)).toBe(true);
        expect(JSON.parse(JSON.stringify(out['d']))).toBe(x === 0 ? 0 : x);
      }),
      { numRuns: 1000 },
    );
  });

  it('a bare integer beyond 2^53 in a union with a long branch is refused, not taken by its double branch rounded (review)', () => {
    const u = avroType(record([{ name: 'n', type: ['null', 'long', 'double'] }]));
    for (const x of [2 ** 53 + 2, -(2 ** 60), 1e16, 1e300]) {
      expect(violationsOf(() => jsonToAvro(u, { n: x })), String(x)).toEqual([{ field: '/n', reason: expect.stringMatching(/beyond ±9007199254740991/) }]);
    }
    // Named, the double branch takes it; a safe integer goes to the long branch; a long as a string too.
    expect(avroToJson(u, jsonToAvro(u, { n: { double: 1e16 } }))).toEqual({ n: { double: 1e16 } });
    expect(avroToJson(u, jsonToAvro(u, { n: 42 }))).toEqual({ n: { long: 42 } });
    expect(avroToJson(u, jsonToAvro(u, { n: 0.5 }))).toEqual({ n: { double: 0.5 } });
  });

  it('float: a large integral number is written as the nearest float; overflow to infinity is refused', () => {
    for (const x of [1e16, -1e20, 2 ** 60, 3.4028234663852886e38, 3.4028235e38, -3.4028235e38]) {
      const out = decodeAvro(t, encodeAvro(t, { ...base, f: x })) as Record<string, unknown>;
      expect(out['f']).toBe(Math.fround(x));
    }
    for (const x of [3.5e38, -1e39, 1e300, Number.MAX_VALUE]) {
      expect(violationsOf(() => jsonToAvro(t, { ...base, f: x }))).toEqual([{ field: '/f', reason: 'number out of the 32-bit float range (it would become infinity)' }]);
    }
  });

  it('StrategySignal.confidence (["null","double"]) takes 1e16 and 1e300', () => {
    const signal = avroType(loadCatalog().byName('StrategySignal')!.schema);
    const data = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'k', strategy: 's', signalId: 'b785f117-3e61-4864-89c3-4accf13140c2', side: 'SELL', price: '1.23450', generatedAt: '2022-03-15T16:00:00Z' };
    for (const confidence of [1e16, -1e20, 1e300, 1.7976931348623157e308]) {
      expect(avroToJson(signal, jsonToAvro(signal, { ...data, confidence }))).toMatchObject({ confidence });
    }
  });

  it('a string is not a double (only "NaN", "Infinity", "-Infinity" are)', () => {
    expect(violationsOf(() => jsonToAvro(t, { ...base, d: '1e16' }))).toEqual([{ field: '/d', reason: 'expected a number (double)' }]);
  });

  it('int and long still refuse integers JSON cannot carry exactly', () => {
    expect(violationsOf(() => jsonToAvro(t, { ...base, n: 1e16, i: 1e16 }))).toEqual([
      { field: '/n', reason: 'integer beyond ±(2^53 − 1) must be given as a decimal string to stay exact' },
      { field: '/i', reason: 'integer out of the 32-bit int range' },
    ]);
    expect((decodeAvro(t, encodeAvro(t, { ...base, n: '10000000000000001' })) as Record<string, unknown>)['n']).toBe('10000000000000001');
  });
});

describe('reading JSON data leaves number ranges to the schema', () => {
  const BIG = ['1e16', '-1e20', '1e300', '1.7976931348623157e308', '10000000000000000.0', '9007199254740993'];

  it.each(BIG)('structured mode: data holding %s is read (the schema decides)', (literal) => {
    const env = parseStructuredEvent(`{"specversion":"1.0","id":"a","source":"s","type":"t","data":{"confidence":${literal},"list":[${literal}]}}`);
    expect(env.data).toEqual({ kind: 'json', value: { confidence: Number(literal), list: [Number(literal)] } });
    expect(validateEnvelope(env)).toEqual([]);
  });

  it.each(BIG)('binary mode / data_base64: JSON data holding %s is read', (literal) => {
    const out = new ViolationCollector();
    expect(readJsonData(Buffer.from(`{"confidence":${literal}}`), '/data', 'application/json', out)).toEqual({ value: { confidence: Number(literal) } });
    expect(out.items).toEqual([]);
  });

  it('a decoded event with a large double is a valid envelope (subscribers do not refuse it)', () => {
    const env: Envelope = { attributes: { specversion: '1.0', id: 'a', source: 's', type: 't' }, data: { kind: 'json', value: { confidence: 1e300, n: [-1e20] } } };
    expect(validateEnvelope(env)).toEqual([]);
  });
});
