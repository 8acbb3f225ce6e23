import { describe, expect, it } from 'vitest';
import { parseHttpRequest } from '../../../src/codec/http/index.js';
import { shortenPointer } from '../../../src/envelope/index.js';
import { caught, ceHeaders, json, violations } from './helpers.js';

const EMPTY = Buffer.alloc(0);

describe('binary mode: attributes from ce- headers', () => {
  it('maps headers to attributes and Content-Type to datacontenttype', () => {
    const r = parseHttpRequest({ ...ceHeaders, 'ce-time': '2024-05-01T12:00:00+02:00', 'content-type': 'application/json' }, json({ close: 1.1 }));
    expect(r.mode).toBe('binary');
    expect(r.events).toHaveLength(1);
    expect(r.events[0]).toEqual({
      attributes: {
        specversion: '1.0',
        id: 'evt-1',
        source: 'urn:caishen:pdsp:host-1',
        type: 'com.caishen.bar.closed',
        time: '2024-05-01T12:00:00+02:00',
        datacontenttype: 'application/json',
      },
      data: { kind: 'json', value: { close: 1.1 } },
    });
    expect(Object.isFrozen(r.events[0])).toBe(true);
    expect(Object.isFrozen(r.events[0]!.attributes)).toBe(true);
  });

  it('matches header names case-insensitively', () => {
    const r = parseHttpRequest({ 'CE-SpecVersion': '1.0', 'Ce-Id': 'x', 'cE-source': 's', 'CE-TYPE': 't', 'Content-Type': 'text/plain' }, Buffer.from('hi'));
    expect(r.events[0]!.attributes).toEqual({ specversion: '1.0', id: 'x', source: 's', type: 't', datacontenttype: 'text/plain' });
  });

  it('types schemaversion as an Integer, leaves unknown extensions as String, accepts long names', () => {
    const r = parseHttpRequest({ ...ceHeaders, 'ce-schemaversion': '3', 'ce-averyveryverylongextensionname': '3', 'ce-flag': 'true' }, EMPTY);
    expect(r.events[0]!.attributes.schemaversion).toBe(3);
    expect(r.events[0]!.attributes.averyveryverylongextensionname).toBe('3');
    expect(r.events[0]!.attributes.flag).toBe('true');
  });

  it('refuses a ce-datacontenttype header, naming datacontenttype', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'ce-datacontenttype': 'application/json' }, EMPTY));
    expect(err.code).toBe('CEG_INVALID_ATTRIBUTE');
    expect(violations(err)).toEqual([{ attribute: 'datacontenttype', reason: expect.stringMatching(/Content-Type/) }]);
  });

  it('refuses a header named just "ce-" (any case), naming the headers', () => {
    for (const name of ['ce-', 'CE-', 'Ce-']) {
      const err = caught(() => parseHttpRequest({ ...ceHeaders, [name.toLowerCase()]: 'x', 'content-type': 'application/json' }, json({ close: 1.1 })));
      expect(err.code, name).toBe('CEG_INVALID_EVENT');
      expect(violations(err), name).toEqual([{ field: 'headers', reason: expect.stringMatching(/"ce-" names no attribute/) }]);
    }
  });

  it('refuses an empty Content-Type, naming datacontenttype (as an empty datacontenttype in structured mode)', () => {
    for (const ct of ['', ' ', '\t']) {
      const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': ct }, json({ close: 1.1 })));
      expect(err.code, JSON.stringify(ct)).toBe('CEG_INVALID_ATTRIBUTE');
      expect(violations(err)).toEqual([{ attribute: 'datacontenttype', reason: expect.stringMatching(/Content-Type is empty/) }]);
    }
    // Reported with the event's other violations.
    const both = caught(() => parseHttpRequest({ ...ceHeaders, 'ce-time': 'yesterday', 'content-type': '' }, json({ close: 1.1 })));
    expect(violations(both).map((v) => v.attribute).sort()).toEqual(['datacontenttype', 'time']);
    // Without data (a tombstone) an empty Content-Type says nothing and is no datacontenttype.
    const r = parseHttpRequest({ ...ceHeaders, 'content-type': '' }, EMPTY);
    expect(r.events[0]!.attributes.datacontenttype).toBeUndefined();
  });

  it('names a missing required attribute', () => {
    const { 'ce-source': _s, ...rest } = ceHeaders;
    const err = caught(() => parseHttpRequest(rest, EMPTY));
    expect(err.code).toBe('CEG_MISSING_ATTRIBUTE');
    expect(err.details.attribute).toBe('source');
  });

  it('treats a request with ce- headers but no ce-specversion as binary and names specversion', () => {
    const { 'ce-specversion': _v, ...rest } = ceHeaders;
    const err = caught(() => parseHttpRequest({ ...rest, 'content-type': 'application/json' }, json({})));
    expect(err.code).toBe('CEG_MISSING_ATTRIBUTE');
    expect(violations(err)).toEqual([{ attribute: 'specversion', reason: 'required attribute is missing' }]);
  });

  it('refuses specversion other than 1.0', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'ce-specversion': '0.3' }, EMPTY));
    expect(violations(err)).toEqual([{ attribute: 'specversion', reason: expect.any(String) }]);
  });

  it('reports every bad header at once', () => {
    const err = caught(() =>
      parseHttpRequest({ ...ceHeaders, 'ce-time': '2024-05-01T12:00:00', 'ce-schemaversion': '3.0', 'ce-bad_name': 'x', 'ce-partitionkey': 'EUR/USD' }, EMPTY),
    );
    expect(err.code).toBe('CEG_INVALID_ATTRIBUTE');
    expect(violations(err).map((v) => v.attribute)).toEqual(['time', 'schemaversion', 'bad_name', 'partitionkey']);
  });

  it('refuses a repeated header naming the attribute', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'ce-subject': ['a', 'b'] }, EMPTY));
    expect(violations(err)).toEqual([{ attribute: 'subject', reason: expect.stringMatching(/2 times/) }]);
    const dup = caught(() => parseHttpRequest({ ...ceHeaders, 'CE-ID': 'other' }, EMPTY));
    expect(violations(dup)[0]!.attribute).toBe('id');
  });

  it('accepts a header given as a one-element array', () => {
    expect(parseHttpRequest({ ...ceHeaders, 'ce-subject': ['a'] }, EMPTY).events[0]!.attributes.subject).toBe('a');
  });

  it('refuses an invalid traceparent header', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'ce-traceparent': '00-0-0-01' }, EMPTY));
    expect(err.details.attribute).toBe('traceparent');
  });
});

describe('binary mode: header value decoding (HTTP binding §3.1.3.2)', () => {
  it('percent-decodes UTF-8, lower-case hex included', () => {
    const r = parseHttpRequest({ ...ceHeaders, 'ce-subject': 'Euro%20%E2%82%AC%20%f0%9f%98%80' }, EMPTY);
    expect(r.events[0]!.attributes.subject).toBe('Euro € 😀');
  });

  it('accepts unnecessarily encoded characters and raw spaces', () => {
    const r = parseHttpRequest({ ...ceHeaders, 'ce-subject': '%41b c' }, EMPTY);
    expect(r.events[0]!.attributes.subject).toBe('Ab c');
  });

  it('unescapes double-quoted values before percent-decoding', () => {
    const r = parseHttpRequest({ ...ceHeaders, 'ce-subject': '"a \\"quoted\\" %25 value"' }, EMPTY);
    expect(r.events[0]!.attributes.subject).toBe('a "quoted" % value');
  });

  it.each([
    ['%C0%A0', /invalid percent-encoding/],
    ['%E2%82', /invalid percent-encoding/],
    ['%zz', /invalid percent-encoding/],
    ['50%', /invalid percent-encoding/],
    ['%ED%A0%80', /invalid percent-encoding/],
    ['"open', /unterminated/],
    ['caf\u00e9', /US-ASCII/],
  ])('refuses %j naming the attribute', (value, reason) => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'ce-subject': value }, EMPTY));
    expect(err.code).toBe('CEG_INVALID_ATTRIBUTE');
    expect(violations(err)).toEqual([{ attribute: 'subject', reason: expect.stringMatching(reason) }]);
  });

  it('refuses a decoded value with a control character', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'ce-subject': 'a%0Ab' }, EMPTY));
    expect(violations(err)).toEqual([{ attribute: 'subject', reason: expect.stringMatching(/control character/) }]);
  });
});

describe('binary mode: body', () => {
  it('parses JSON for application/json and +json media types, with parameters, any case', () => {
    for (const ct of ['application/json', 'Application/JSON; charset=UTF-8', 'application/vnd.caishen.bar+json', 'text/json']) {
      const r = parseHttpRequest({ ...ceHeaders, 'content-type': ct }, json([1, 'x']));
      expect(r.events[0]!.data, ct).toEqual({ kind: 'json', value: [1, 'x'] });
    }
  });

  it('keeps other media types as exact bytes', () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254]);
    const r = parseHttpRequest({ ...ceHeaders, 'content-type': 'application/octet-stream' }, bytes);
    const data = r.events[0]!.data!;
    expect(data.kind).toBe('binary');
    expect(Buffer.from((data as { bytes: Uint8Array }).bytes)).toEqual(bytes);
  });

  it('treats a body without Content-Type as bytes', () => {
    const r = parseHttpRequest({ ...ceHeaders }, Buffer.from('{"a":1}'));
    expect(r.events[0]!.data!.kind).toBe('binary');
    expect(r.events[0]!.attributes.datacontenttype).toBeUndefined();
  });

  it('an empty body means no data', () => {
    const r = parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, EMPTY);
    expect(r.events[0]!.data).toBeUndefined();
    expect(r.events[0]!.attributes.datacontenttype).toBe('application/json');
  });

  it('keeps a JSON null body as JSON null data', () => {
    expect(parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, Buffer.from('null')).events[0]!.data).toEqual({ kind: 'json', value: null });
  });

  it('refuses malformed JSON naming /data', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, Buffer.from('{"a":')));
    expect(err.code).toBe('CEG_INVALID_DATA');
    expect(violations(err)).toEqual([{ field: '/data', reason: expect.stringMatching(/not valid JSON/) }]);
  });

  it('refuses JSON that is not UTF-8', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, Buffer.from([0x22, 0xff, 0x22])));
    expect(violations(err)[0]).toEqual({ field: '/data', reason: expect.stringMatching(/UTF-8/) });
  });

  it('ignores a UTF-8 BOM', () => {
    const r = parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json({ a: 1 })]));
    expect(r.events[0]!.data).toEqual({ kind: 'json', value: { a: 1 } });
  });

  it('refuses numbers JSON overflows to infinity naming each by JSON pointer; large integers are left to the schema', () => {
    const body = Buffer.from('{"bar":{"volume":12345678901234567890,"n":[1,9007199254740993,-1e999]},"ok":9007199254740991,"big":1e400,"x/y~z":1e20}');
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, body));
    expect(err.code).toBe('CEG_INVALID_DATA');
    expect(violations(err)).toEqual([
      { field: '/data/bar/n/2', reason: 'number is not finite' },
      { field: '/data/big', reason: 'number is not finite' },
    ]);
  });

  it('a top-level number body: an integer beyond 2^53 is read (the schema decides), an overflow is refused naming /data', () => {
    expect(parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, Buffer.from('18446744073709551616')).events[0]!.data).toEqual({ kind: 'json', value: 18446744073709551616 });
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, Buffer.from('1e400')));
    expect(violations(err)).toEqual([{ field: '/data', reason: 'number is not finite' }]);
  });

  it('freezes JSON data deeply', () => {
    const r = parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, json({ a: { b: [{ c: 1 }] } }));
    const v = (r.events[0]!.data as unknown as { value: { a: { b: object[] } } }).value;
    expect(Object.isFrozen(v.a.b[0])).toBe(true);
    expect(Object.isFrozen(v.a.b)).toBe(true);
  });

  it('refuses a malformed Content-Type as datacontenttype', () => {
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': 'json' }, Buffer.from('x')));
    expect(err.details.attribute).toBe('datacontenttype');
  });
});

describe('binary mode: hostile nesting', () => {
  it('refuses data nested deeper than 256 levels instead of overflowing the stack', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const err = caught(() => parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, Buffer.from(deep)));
    expect(err.code).toBe('CEG_INVALID_DATA');
    const v = violations(err);
    expect(v).toHaveLength(1);
    expect(v[0]!.reason).toMatch(/deeper than 256/);
    // The 517-character pointer is cut to its first and last 127 characters (docs/errors.md).
    expect(v[0]!.field).toBe(shortenPointer('/data' + '/0'.repeat(256)));
    expect(v[0]!.field).toHaveLength(255);
  });

  it('accepts 256 levels', () => {
    const ok = '['.repeat(256) + ']'.repeat(256);
    expect(parseHttpRequest({ ...ceHeaders, 'content-type': 'application/json' }, Buffer.from(ok)).events).toHaveLength(1);
  });
});
