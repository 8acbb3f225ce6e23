/**
 * The JSON event format module (codec/json): strict JSON text — duplicate member names refused,
 * found anywhere, named by JSON pointer — checked with generated JSON; attribute limits counted
 * before attributes are looked at; Integer attributes as canonical strings; JSON data from bytes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonText, parseStructuredEvent, readJsonData, readStructuredEvent, structuredJsonText, toStructuredJson } from '../../../src/codec/json/index.js';
import type { Envelope } from '../../../src/envelope/index.js';
import { ViolationCollector } from '../../../src/envelope/index.js';
import { caught } from '../../helpers/errors.js';

const ev = { specversion: '1.0', id: 'e-1', source: 'urn:x', type: 't' };

describe('parseJsonText: strict JSON', () => {
  it('reads any JSON value as JSON.parse does (generated values)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = JSON.stringify(v);
        const r = parseJsonText(text);
        expect(r.ok).toBe(true);
        if (r.ok) expect(r.value).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a duplicate member name wherever it is, naming it by JSON pointer (generated objects)', () => {
    const key = fc.string({ maxLength: 6 });
    fc.assert(
      fc.property(fc.dictionary(key, fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 5 }), fc.array(fc.oneof(key, fc.nat({ max: 3 })), { maxLength: 3 }), (obj, path) => {
        // Nest the object under `path`, then repeat its first member in the text.
        const name = Object.keys(obj)[0]!;
        let doc: unknown = obj;
        const tokens: string[] = [];
        for (const seg of [...path].reverse()) {
          doc = typeof seg === 'number' ? [...Array.from({ length: seg }, () => 0), doc] : { [seg]: doc };
          tokens.unshift(String(seg));
        }
        const marker = '"__dup_marker__":0';
        const withMarker = JSON.stringify(doc, (_k, v: unknown) => (v === obj ? { __dup_marker__: 0, ...obj } : v));
        const text = withMarker.replace(marker, () => `${JSON.stringify(name)}:${JSON.stringify(obj[name])}`);
        const r = parseJsonText(text);
        expect(r.ok).toBe(false);
        if (!r.ok) {
          const esc = (t: string): string => t.replace(/~/g, '~0').replace(/\//g, '~1');
          expect(r.pointer).toBe([...tokens, name].map((t) => '/' + esc(t)).join(''));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('compares member names after unescaping ("a" and "\\u0061" are the same name)', () => {
    const r = parseJsonText('{"a":1,"\\u0061":2}');
    expect(r).toMatchObject({ ok: false, pointer: '/a' });
  });

  it('refuses invalid UTF-8 and ignores a leading BOM', () => {
    expect(parseJsonText(Buffer.from([0x22, 0xc3, 0x28, 0x22]))).toMatchObject({ ok: false, reason: 'not valid UTF-8' });
    expect(parseJsonText(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]))).toEqual({ ok: true, value: { a: 1 } });
  });
});

describe('readStructuredEvent', () => {
  it('accepts the canonical string of an Integer for schemaversion, refuses other strings', () => {
    expect(parseStructuredEvent(JSON.stringify({ ...ev, schemaversion: '3' })).attributes.schemaversion).toBe(3);
    const err = caught(() => parseStructuredEvent(JSON.stringify({ ...ev, schemaversion: '03' })));
    expect(err.details.attribute).toBe('schemaversion');
  });

  it('refuses more attributes than maxAttributes before checking any of them: one violation naming the limit', () => {
    const obj: Record<string, unknown> = { ...ev };
    for (let i = 0; i < 50_000; i++) obj[`BAD_${i}`] = { not: 'a value' }; // every one would be a violation if looked at
    const out = new ViolationCollector();
    expect(readStructuredEvent(obj, out, 'body', { maxAttributes: 100, maxAttributeBytes: 16_384 })).toBeUndefined();
    expect(out.items).toEqual([{ field: 'body', reason: expect.stringMatching(/maxAttributes \(100\)/) as string, code: 'CEG_TOO_MANY_ATTRIBUTES' }]);
    const err = out.toError();
    expect(err.code).toBe('CEG_TOO_MANY_ATTRIBUTES');
    expect(err.details).toMatchObject({ limit: 'maxAttributes', max: 100, actual: 50_004 });
  });

  it('counts attribute bytes (names + canonical values) against maxAttributeBytes', () => {
    const err = caught(() => parseStructuredEvent(JSON.stringify({ ...ev, big: 'x'.repeat(200) }), { maxAttributes: 100, maxAttributeBytes: 200 }));
    expect(err.code).toBe('CEG_ATTRIBUTES_TOO_LARGE');
    expect(err.details).toMatchObject({ limit: 'maxAttributeBytes', max: 200 });
    expect(parseStructuredEvent(JSON.stringify({ ...ev, big: 'x'.repeat(100) }), { maxAttributes: 100, maxAttributeBytes: 200 }).attributes.big).toHaveLength(100);
  });
});

describe('readJsonData', () => {
  it('holds JSON bytes to the rules of a JSON body: UTF-8, duplicate names, finite numbers (large integers are left to the schema)', () => {
    const check = (bytes: Buffer): string[] => {
      const out = new ViolationCollector();
      readJsonData(bytes, '/data_base64', 'application/json', out);
      return out.items.map((v) => `${v.field ?? ''} ${v.reason}`);
    };
    expect(check(Buffer.from([0x7b, 0xff, 0x7d]))).toEqual([expect.stringMatching(/^\/data_base64 .*not valid UTF-8/)]);
    expect(check(Buffer.from('{"a":{"b":1,"b":2}}'))).toEqual([expect.stringMatching(/^\/data_base64\/a\/b .*more than once/)]);
    expect(check(Buffer.from('{"n":1e400}'))).toEqual(['/data_base64/n number is not finite']);
    expect(check(Buffer.from('{"n":9007199254740993,"d":1e300}'))).toEqual([]);
    expect(check(Buffer.from('{"ok":true}'))).toEqual([]);
  });
});

describe('structuredJsonText', () => {
  // Names as attributes have them, plus the JSON format's own member names, which must not repeat.
  const name = fc.oneof(fc.stringMatching(/^[a-z0-9]{1,8}$/), fc.constantFrom('data', 'data_base64', 'datacontenttype', '0', '17'));
  const value = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(undefined));
  const contentType = fc.constantFrom(undefined, 'application/json', 'application/cloudevents+json; charset=utf-8', 'text/plain', 'application/avro');
  const data = fc.oneof(
    fc.constant(undefined),
    fc.record({ kind: fc.constant('json' as const), value: fc.oneof(fc.jsonValue(), fc.constant(undefined)) }),
    fc.record({ kind: fc.constant('binary' as const), bytes: fc.uint8Array({ maxLength: 16 }) }),
  );

  it('is the text of JSON.stringify(toStructuredJson(env)) for any envelope, or throws as it does (generated)', () => {
    fc.assert(
      fc.property(fc.dictionary(name, value, { maxKeys: 8 }), contentType, data, (extra, ct, d) => {
        const attributes = { ...ev, ...extra, ...(ct === undefined ? {} : { datacontenttype: ct }) };
        const env = (d === undefined ? { attributes } : { attributes, data: d }) as unknown as Envelope;
        let expected: string;
        try {
          expected = JSON.stringify(toStructuredJson(env));
        } catch (err) {
          expect(() => structuredJsonText(env)).toThrow((err as Error).message);
          return;
        }
        const text = structuredJsonText(env);
        expect(text).toBe(expected);
        expect(JSON.parse(text)).toEqual(JSON.parse(expected));
      }),
      { numRuns: 500 },
    );
  });

  it('writes the data after the attributes, in their order', () => {
    const env = { attributes: { ...ev, datacontenttype: 'application/json' }, data: { kind: 'json', value: { a: [1, 'x'] } } } as Envelope;
    expect(structuredJsonText(env)).toBe('{"specversion":"1.0","id":"e-1","source":"urn:x","type":"t","datacontenttype":"application/json","data":{"a":[1,"x"]}}');
  });
});
