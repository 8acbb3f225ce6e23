import { describe, expect, it } from 'vitest';
import { ViolationCollector, attributeNameProblem, checkEnvelope, knownAttributes, validateEnvelope } from '../../../src/envelope/index.js';
import type { Envelope } from '../../../src/envelope/index.js';
import { caught } from '../../helpers/errors.js';

const base = { specversion: '1.0', id: 'e-1', source: 'urn:caishen:pdsp:host-1', type: 'com.caishen.bar.closed' } as const;

function env(attrs: Record<string, unknown>, data?: Envelope['data']): Envelope {
  return (data === undefined ? { attributes: attrs } : { attributes: attrs, data }) as unknown as Envelope;
}

describe('validateEnvelope: required attributes', () => {
  it('accepts a minimal event', () => {
    expect(validateEnvelope(env({ ...base }))).toEqual([]);
  });

  it('names each missing required attribute', () => {
    expect(validateEnvelope(env({ specversion: '1.0' }))).toEqual([
      { attribute: 'id', reason: 'required attribute is missing' },
      { attribute: 'source', reason: 'required attribute is missing' },
      { attribute: 'type', reason: 'required attribute is missing' },
    ]);
  });

  it("requires specversion '1.0'", () => {
    const v = validateEnvelope(env({ ...base, specversion: '0.3' }));
    expect(v).toHaveLength(1);
    expect(v[0]!.attribute).toBe('specversion');
  });

  it.each(['id', 'source', 'type'])('refuses an empty %s', (name) => {
    const v = validateEnvelope(env({ ...base, [name]: '' }));
    expect(v.map((x) => x.attribute)).toEqual([name]);
  });

  it('refuses a non-string id', () => {
    expect(validateEnvelope(env({ ...base, id: 5 }))[0]).toMatchObject({ attribute: 'id' });
  });
});

describe('validateEnvelope: names', () => {
  it('accepts names longer than 20 characters (only a SHOULD)', () => {
    expect(validateEnvelope(env({ ...base, averyveryverylongextensionname42: 'x' }))).toEqual([]);
  });

  it.each(['Upper', 'with-dash', 'under_score', 'ümlaut', ''])('refuses attribute name %j', (name) => {
    const v = validateEnvelope(env({ ...base, [name]: 'x' }));
    expect(v).toHaveLength(1);
    expect(v[0]!.attribute).toBe(name);
    expect(v[0]!.reason).toMatch(/lowercase letters/);
  });

  it("refuses the reserved name 'data'", () => {
    expect(validateEnvelope(env({ ...base, data: 'x' }))[0]).toMatchObject({ attribute: 'data', reason: expect.stringMatching(/reserved/) });
  });
});

describe('validateEnvelope: types', () => {
  it('accepts unknown extensions of each native type', () => {
    expect(validateEnvelope(env({ ...base, flag: true, count: -2147483648, label: 'x' }))).toEqual([]);
  });

  it('refuses a non-integer and an out-of-range Integer', () => {
    const v = validateEnvelope(env({ ...base, ratio: 1.5, big: 2147483648 }));
    expect(v.map((x) => x.attribute)).toEqual(['ratio', 'big']);
  });

  it('refuses an object value', () => {
    expect(validateEnvelope(env({ ...base, obj: { a: 1 } }))[0]).toMatchObject({ attribute: 'obj' });
  });

  it('refuses control characters, noncharacters and lone surrogates in Strings', () => {
    const v = validateEnvelope(env({ ...base, a: 'x\ny', b: 'x\u{FFFE}', c: 'x\uD800', d: 'ok \u{1F600}', e: 'x\u0085' }));
    expect(v.map((x) => x.attribute)).toEqual(['a', 'b', 'c', 'e']);
  });

  it('checks source as URI-reference', () => {
    for (const ok of ['urn:caishen:pdsp:host-1', '/sensors/tn-1234567/alerts', '1-555-123-4567', 'https://example.com/a?b=c#d', 'a%20b']) {
      expect(validateEnvelope(env({ ...base, source: ok })), ok).toEqual([]);
    }
    for (const bad of ['has space', 'a%2', 'x#y#z', '1a:b', 'ü']) {
      expect(validateEnvelope(env({ ...base, source: bad }))[0], bad).toMatchObject({ attribute: 'source' });
    }
  });

  it('checks dataschema as an absolute URI', () => {
    expect(validateEnvelope(env({ ...base, dataschema: 'https://schemas.example.com/ids/7' }))).toEqual([]);
    expect(validateEnvelope(env({ ...base, dataschema: '/ids/7' }))[0]).toMatchObject({ attribute: 'dataschema' });
    expect(validateEnvelope(env({ ...base, dataschema: '' }))[0]).toMatchObject({ attribute: 'dataschema' });
  });

  it('checks datacontenttype as a media type', () => {
    expect(validateEnvelope(env({ ...base, datacontenttype: 'application/json; charset=utf-8' }))).toEqual([]);
    expect(validateEnvelope(env({ ...base, datacontenttype: 'json' }))[0]).toMatchObject({ attribute: 'datacontenttype' });
  });

  it('refuses an empty subject', () => {
    expect(validateEnvelope(env({ ...base, subject: '' }))[0]).toMatchObject({ attribute: 'subject' });
  });
});

describe('validateEnvelope: time', () => {
  it.each(['2024-05-01T12:00:00Z', '2024-05-01T12:00:00.123456+02:00', '2024-02-29T23:59:59Z', '2024-05-01T12:00:00-00:00', '0001-01-01T18:00:00+18:00', '9999-12-31T23:59:59-00:00'])('accepts %s', (time) => {
    expect(validateEnvelope(env({ ...base, time }))).toEqual([]);
  });

  it.each(['2024-05-01T12:00:00', '2024-05-01 12:00:00Z', '2023-02-29T00:00:00Z', '2024-05-01T24:00:00Z', '2024-05-01T12:00:00+2400', '2024-13-01T00:00:00Z', 'yesterday'])(
    'refuses %s naming time',
    (time) => {
      const v = validateEnvelope(env({ ...base, time }));
      expect(v).toHaveLength(1);
      expect(v[0]).toMatchObject({ attribute: 'time', reason: expect.stringMatching(/RFC 3339/) });
    },
  );
});

describe('validateEnvelope: ce-gateway extensions', () => {
  it('accepts well-formed values', () => {
    const attrs = {
      ...base,
      correlationid: 'c-1',
      causationid: 'e-0',
      runid: 'run-7',
      eventname: 'Bar closed',
      partitionkey: 'EUR-USD_H4',
      schemaversion: 3,
      eventclass: 'document',
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate: 'congo=t61rcWkgMzE',
    };
    expect(validateEnvelope(env(attrs))).toEqual([]);
  });

  it('refuses schemaversion as a string or below 1', () => {
    expect(validateEnvelope(env({ ...base, schemaversion: '3' }))[0]).toMatchObject({ attribute: 'schemaversion' });
    expect(validateEnvelope(env({ ...base, schemaversion: 0 }))[0]).toMatchObject({ attribute: 'schemaversion' });
  });

  it.each(['EUR/USD', '', 'a'.repeat(250), 'ключ'])('refuses partitionkey %j', (partitionkey) => {
    expect(validateEnvelope(env({ ...base, partitionkey }))[0]).toMatchObject({ attribute: 'partitionkey' });
  });

  it('accepts a 249-character partitionkey', () => {
    expect(validateEnvelope(env({ ...base, partitionkey: 'a'.repeat(249) }))).toEqual([]);
  });

  it('refuses an eventclass outside notification|document', () => {
    expect(validateEnvelope(env({ ...base, eventclass: 'command' }))[0]).toMatchObject({ attribute: 'eventclass' });
  });

  it.each([
    '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7',
  ])('refuses traceparent %s', (traceparent) => {
    expect(validateEnvelope(env({ ...base, traceparent }))[0]).toMatchObject({ attribute: 'traceparent' });
  });

  it('reports every violation at once, in attribute order', () => {
    const v = validateEnvelope(env({ specversion: '1.0', id: 'x', source: 's', time: 'now', partitionkey: 'a b', schemaversion: 1.5 }));
    expect(v.map((x) => x.attribute)).toEqual(['time', 'partitionkey', 'schemaversion', 'type']);
  });
});

describe('validateEnvelope: data', () => {
  it('names a non-finite number in data by JSON pointer', () => {
    const v = validateEnvelope(env({ ...base }, { kind: 'json', value: { bar: { volume: Infinity }, list: [1, Number.NaN], 'a/b': -Infinity } }));
    expect(v.map((x) => x.field)).toEqual(['/data/bar/volume', '/data/list/1', '/data/a~1b']);
    expect(v[0]!.reason).toBe('number is not finite');
  });

  it('accepts floats and integers of any size: the kind schema decides (an Avro long refuses 2^60, a double takes it)', () => {
    expect(validateEnvelope(env({ ...base }, { kind: 'json', value: { p: 1.2345, n: Number.MAX_SAFE_INTEGER, m: -Number.MAX_SAFE_INTEGER, big: 2 ** 60, huge: [1e300, -1e20] } }))).toEqual([]);
  });

  it('checks binary data is bytes', () => {
    expect(validateEnvelope(env({ ...base }, { kind: 'binary', bytes: new Uint8Array([1]) }))).toEqual([]);
    expect(validateEnvelope(env({ ...base }, { kind: 'binary', bytes: 'x' } as never))[0]).toMatchObject({ field: '/data' });
  });
});

/** The error a binding throws for an invalid envelope (codec/http: collect every violation, then `toError()`). */
function assertValidEnvelope(e: Envelope): void {
  const out = new ViolationCollector();
  checkEnvelope(e, out);
  if (out.size > 0) throw out.toError();
}

describe('checkEnvelope → ViolationCollector.toError: the code follows the violations', () => {
  it('throws CEG_MISSING_ATTRIBUTE when only required attributes are missing', () => {
    const err = caught(() => assertValidEnvelope(env({ specversion: '1.0', id: 'x', source: 's' })));
    expect(err.code).toBe('CEG_MISSING_ATTRIBUTE');
    expect(err.retriable).toBe(false);
    expect(err.details.attribute).toBe('type');
    expect(err.details.violations).toEqual([{ attribute: 'type', reason: 'required attribute is missing' }]);
  });

  it('throws CEG_INVALID_ATTRIBUTE listing every violation', () => {
    const err = caught(() => assertValidEnvelope(env({ ...base, time: '2024-05-01T12:00:00', Bad: 1 })));
    expect(err.code).toBe('CEG_INVALID_ATTRIBUTE');
    expect((err.details.violations as { attribute: string }[]).map((v) => v.attribute)).toEqual(['time', 'Bad']);
    expect(err.details.attribute).toBe('time');
    expect(err.message).toContain('time:');
  });

  it('throws CEG_INVALID_DATA for data-only problems', () => {
    const err = caught(() => assertValidEnvelope(env({ ...base }, { kind: 'json', value: { volume: Infinity } })));
    expect(err.code).toBe('CEG_INVALID_DATA');
    expect(err.details.field).toBe('/data/volume');
  });

  it('does not throw for a valid envelope', () => {
    expect(() => assertValidEnvelope(env({ ...base, time: '2024-05-01T12:00:00+05:30' }))).not.toThrow();
  });
});

describe('attributeNameProblem shortcut for known attributes (issue 14)', () => {
  it('is sound: every known attribute is a legal name by the naming rule itself', () => {
    for (const name of knownAttributes.keys()) {
      expect(/^[a-z0-9]+$/.test(name) && name !== 'data').toBe(true);
      expect(attributeNameProblem(name)).toBeUndefined();
    }
    expect(attributeNameProblem('Data')).toMatch(/lowercase/);
    expect(attributeNameProblem('data')).toMatch(/reserved/);
    expect(attributeNameProblem('')).toMatch(/^an empty attribute name/);
  });
});
