import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HEADER_PREFIX, attributeBytesOf, fromRecord, toBinaryRecord } from '../../../src/codec/kafka/index.js';
import { attributeEntries } from '../../../src/envelope/index.js';
import type { Attributes } from '../../../src/envelope/types.js';
import type { RecordHeader, TransportRecord } from '../../../src/transport/port.js';
import { caught as poison } from '../../helpers/errors.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

const attrs: Attributes = {
  specversion: '1.0',
  id: 'evt-1',
  source: 'urn:pdsp:host-1',
  type: '78b8fd47-3ff3-4881-9419-7bfe84ce89cb',
  time: '2022-03-15T12:00:02.000+01:00',
  datacontenttype: 'application/avro',
  schemaversion: 3,
  partitionkey: 'EUR-USD_H4',
  eventname: 'PriceLoadingCompleted',
};

const asText = (headers: readonly RecordHeader[]): [string, string][] => headers.map(([k, v]) => [k, dec.decode(v)]);

function record(headers: [string, string | Uint8Array][], value: Uint8Array | null = enc.encode('v')): TransportRecord {
  return {
    topic: 't',
    partition: 2,
    offset: 5n,
    timestampMs: 0,
    key: null,
    value,
    headers: headers.map(([k, v]) => [k, typeof v === 'string' ? enc.encode(v) : v] as const),
  };
}

const required: [string, string][] = [
  ['ce_specversion', '1.0'],
  ['ce_id', 'e1'],
  ['ce_source', 'urn:x'],
  ['ce_type', 'k'],
];

describe('toBinaryRecord', () => {
  it('writes one ce_<attribute> header per attribute with its canonical string, and content-type for datacontenttype', () => {
    const r = toBinaryRecord({ ...attrs, flag: true, subject: undefined }, enc.encode('body'));
    expect(HEADER_PREFIX).toBe('ce_');
    expect(asText(r.headers)).toEqual([
      ['ce_specversion', '1.0'],
      ['ce_id', 'evt-1'],
      ['ce_source', 'urn:pdsp:host-1'],
      ['ce_type', '78b8fd47-3ff3-4881-9419-7bfe84ce89cb'],
      ['ce_time', '2022-03-15T12:00:02.000+01:00'],
      ['content-type', 'application/avro'],
      ['ce_schemaversion', '3'],
      ['ce_partitionkey', 'EUR-USD_H4'],
      ['ce_eventname', 'PriceLoadingCompleted'],
      ['ce_flag', 'true'],
    ]);
    for (const [, v] of r.headers) expect(v).toBeInstanceOf(Uint8Array);
  });

  it('keys the record by partitionkey (UTF-8), keeps the value, and stamps the record with the write time, not with time', () => {
    const before = Date.now();
    const value = enc.encode('body');
    const r = toBinaryRecord(attrs, value);
    expect(Buffer.from(r.key!).equals(enc.encode('EUR-USD_H4'))).toBe(true);
    expect(r.value).toBe(value);
    // Retention and the broker's future-timestamp limit apply to this timestamp: a 2022 `time` must not make it 2022.
    expect(r.timestampMs).toBeGreaterThanOrEqual(before);
    expect(r.timestampMs).toBeLessThanOrEqual(Date.now());
    expect(r.partition).toBeUndefined();
  });

  it('has a null key without partitionkey, a null value for a tombstone, and timestamp now without time', () => {
    const { partitionkey: _k, time: _t, ...rest } = attrs;
    const before = Date.now();
    const r = toBinaryRecord(rest, null);
    expect(r.key).toBeNull();
    expect(r.value).toBeNull();
    expect(r.timestampMs).toBeGreaterThanOrEqual(before);
    expect(r.timestampMs).toBeLessThanOrEqual(Date.now());
    expect(r.headers.map(([k]) => k)).not.toContain('ce_time');
  });
});

describe('fromRecord', () => {
  it('round-trips toBinaryRecord: typed attributes back, content-type as datacontenttype', () => {
    const out = toBinaryRecord(attrs, enc.encode('body'));
    const read = fromRecord({ topic: 't', partition: 0, offset: 0n, timestampMs: 0, key: out.key, value: out.value, headers: out.headers });
    expect(read).toEqual({ mode: 'binary', attributes: attrs, value: enc.encode('body') });
    if (read.mode === 'binary') expect(read.attributes.schemaversion).toBe(3);
  });

  it('round-trips string attributes starting with U+FEFF (or made of it): a leading BOM is part of the value, not dropped', () => {
    // A tester's find: ingress accepted id "\ufeffbom-1" and subject "\ufeff"; the read dropped the BOM, so the
    // event became a duplicate of "bom-1" by source+id, or poison (an empty subject) on every subscription.
    const text = fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => `\ufeff${s}`);
    fc.assert(fc.property(text, text, text, (id, subject, correlationid) => {
      const a: Attributes = { ...attrs, id, subject, correlationid };
      const out = toBinaryRecord(a, enc.encode('body'));
      const read = fromRecord({ topic: 't', partition: 0, offset: 0n, timestampMs: 0, key: out.key, value: out.value, headers: out.headers });
      expect(read.mode === 'binary' ? read.attributes : undefined).toEqual(a);
    }));
  });

  it('matches header names case-insensitively and ignores headers outside the binding', () => {
    const read = fromRecord(record([['CE_SpecVersion', '1.0'], ['ce_id', 'e1'], ['Ce_Source', 'urn:x'], ['ce_type', 'k'], ['traceparent-raw', 'x'], ['Content-Type', 'application/json']]));
    expect(read).toEqual({ mode: 'binary', attributes: { specversion: '1.0', id: 'e1', source: 'urn:x', type: 'k', datacontenttype: 'application/json' }, value: enc.encode('v') });
  });

  it('refuses a repeated content-type, or one beside a ce_datacontenttype of another value, as poison naming datacontenttype (never "the last one wins")', () => {
    for (const extra of [
      [['content-type', 'application/avro'], ['Content-Type', 'text/plain']],
      [['content-type', 'application/avro'], ['content-type', 'application/avro']],
      [['content-type', 'application/cloudevents+json'], ['content-type', 'application/avro']],
      [['ce_datacontenttype', 'text/plain'], ['content-type', 'application/avro']],
      [['content-type', 'application/avro'], ['ce_datacontenttype', 'text/plain']],
      [['content-type', 'application/avro'], ['ce_datacontenttype', 'Application/Avro']],
      [['ce_datacontenttype', 'application/avro'], ['ce_datacontenttype', 'application/avro']],
    ] as [string, string][][]) {
      const err = poison(() => fromRecord(record([...required, ...extra])));
      expect(err.code).toBe('CEG_INVALID_EVENT');
      expect(err.retriable).toBe(false);
      expect(err.message).toBe(`duplicate header ${extra[1]![0]}`);
      expect(err.details).toMatchObject({ attribute: 'datacontenttype' });
    }
  });

  it('reads ce_datacontenttype beside content-type of the same value as one datacontenttype (the cloudevents JS SDK\'s Kafka.binary writes both); a third copy is poison', () => {
    for (const extra of [
      [['content-type', 'application/avro'], ['ce_datacontenttype', 'application/avro']],
      [['ce_datacontenttype', 'application/avro'], ['content-type', 'application/avro']],
    ] as [string, string][][]) {
      expect(fromRecord(record([...required, ...extra]))).toEqual({ mode: 'binary', attributes: { specversion: '1.0', id: 'e1', source: 'urn:x', type: 'k', datacontenttype: 'application/avro' }, value: enc.encode('v') });
      for (const third of [['content-type', 'application/avro'], ['ce_datacontenttype', 'application/avro']] as [string, string][]) {
        const err = poison(() => fromRecord(record([...required, ...extra, third])));
        expect(err.code).toBe('CEG_INVALID_EVENT');
        expect(err.message).toBe(`duplicate header ${third[0]}`);
        expect(err.details).toMatchObject({ attribute: 'datacontenttype' });
      }
    }
  });

  it('refuses a repeated ce_ header as poison: CEG_INVALID_EVENT, not retriable, naming the attribute and the record', () => {
    const err = poison(() => fromRecord(record([...required, ['ce_id', 'e2']])));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(err.retriable).toBe(false);
    expect(err.message).toBe('duplicate header ce_id');
    expect(err.details).toEqual({ attribute: 'id', topic: 't', partition: 2, offset: '5' });
  });

  it('treats ce_id and CE_ID as the same header (a duplicate)', () => {
    expect(poison(() => fromRecord(record([...required, ['CE_ID', 'e2']]))).details.attribute).toBe('id');
  });

  it('refuses a header that is not UTF-8', () => {
    const err = poison(() => fromRecord(record([...required, ['ce_subject', new Uint8Array([0xff, 0xfe])]])));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(err.message).toContain('not valid UTF-8');
  });

  it('refuses a record without ce_specversion (not a CloudEvent)', () => {
    const err = poison(() => fromRecord(record([['ce_id', 'e1'], ['ce_source', 'urn:x'], ['ce_type', 'k']])));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(err.details.attribute).toBe('specversion');
  });

  it.each(['id', 'source', 'type'])('refuses a binary record without the required ce_%s header', (name) => {
    const err = poison(() => fromRecord(record(required.filter(([k]) => k !== `ce_${name}`))));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(err.details.attribute).toBe(name);
  });

  it('refuses an attribute whose header is not its canonical form (schemaversion "3.0")', () => {
    const err = poison(() => fromRecord(record([...required, ['ce_schemaversion', '3.0']])));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(err.details.attribute).toBe('schemaversion');
  });

  it('detects structured mode by content-type application/cloudevents+json without ce_specversion', () => {
    const json = JSON.stringify({ specversion: '1.0', id: 'e', source: 'urn:x', type: 'k' });
    expect(fromRecord(record([['content-type', 'application/cloudevents+json; charset=utf-8']], enc.encode(json)))).toEqual({ mode: 'structured', json });
    expect(fromRecord(record([['content-type', 'Application/CloudEvents+JSON']], enc.encode(json)))).toEqual({ mode: 'structured', json });
  });

  it('refuses a structured record without a value', () => {
    const err = poison(() => fromRecord(record([['content-type', 'application/cloudevents+json']], null)));
    expect(err.code).toBe('CEG_INVALID_EVENT');
    expect(err.message).toBe('structured-mode record without a value');
  });

  it('reads a record with ce_ headers as binary even when content-type says cloudevents+json', () => {
    const read = fromRecord(record([...required, ['content-type', 'application/cloudevents+json']]));
    expect(read.mode).toBe('binary');
  });

  it('a binary tombstone keeps a null value', () => {
    const read = fromRecord(record(required, null));
    expect(read).toEqual({ mode: 'binary', attributes: { specversion: '1.0', id: 'e1', source: 'urn:x', type: 'k' }, value: null });
  });
});

describe('fromRecord across a stream (per-header caches)', () => {
  // The header name → last bytes/text/value caches must never change a result: whatever order
  // repeating, changing, invalid and non-UTF-8 values come in, each record reads as if alone.
  const values: Record<string, readonly (string | Uint8Array)[]> = {
    ce_type: ['t1', 't2'],
    ce_source: ['urn:a', 'urn:b', ''],
    ce_schemaversion: ['3', '4', '3.0', 'x'],
    ce_id: ['a', 'b', 'c', 'd', 'e'],
    ce_flag: ['true', 'false'],
    'content-type': ['application/avro', 'application/json'],
    ce_bad: [new Uint8Array([0xc3, 0x28]), 'ok'],
  };
  const names = Object.keys(values);
  const outcome = (r: TransportRecord): unknown => {
    try {
      return { ok: fromRecord(r) };
    } catch (err) {
      return { err: (err as Error).message };
    }
  };

  it('reads each record of a random stream the same as a fresh read of it would', () => {
    const header = fc.constantFrom(...names).chain((n) => fc.constantFrom(...values[n]!).map((v): [string, string | Uint8Array] => [n, v]));
    const rec = fc.array(header, { maxLength: 6 }).map((hs) => record([['ce_specversion', '1.0'], ...hs]));
    fc.assert(
      fc.property(fc.array(rec, { minLength: 1, maxLength: 40 }), (stream) => {
        const seen = stream.map(outcome);
        // The reference: every record read again, reversed (other cache states), must agree.
        const again = [...stream].reverse().map(outcome).reverse();
        expect(seen).toEqual(again);
        for (let i = 0; i < stream.length; i++) {
          const o = seen[i] as { ok?: { attributes: Record<string, unknown> } };
          if (o.ok === undefined) continue;
          // Typed as parsed alone: schemaversion an integer, the rest as the header said.
          for (const [n, v] of stream[i]!.headers) {
            if (!n.startsWith('ce_')) continue;
            const a = o.ok.attributes[n.slice(3)];
            expect(typeof a === 'number' ? String(a) : a).toBe(dec.decode(v));
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('attributeBytesOf (issue 14: the size bound counted on the encoded headers)', () => {
  it('equals the UTF-8 bytes of every attribute name and canonical value', () => {
    const value = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 12 }), fc.integer(), fc.boolean(), fc.constant(undefined));
    const extensions = fc.dictionary(fc.stringMatching(/^[a-z0-9]{1,12}$/), value, { maxKeys: 8 });
    fc.assert(
      fc.property(extensions, fc.option(fc.string({ maxLength: 20 }), { nil: undefined }), (ext, ct) => {
        const a = { ...ext, specversion: '1.0', id: 'e-1', source: 'urn:s', type: 't', datacontenttype: ct } as Attributes;
        let expected = 0;
        for (const [name, v] of attributeEntries(a)) expected += Buffer.byteLength(name) + Buffer.byteLength(v);
        expect(attributeBytesOf(toBinaryRecord(a, null).headers)).toBe(expected);
      }),
    );
  });
});
