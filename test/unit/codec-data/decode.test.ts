import { describe, expect, it } from 'vitest';
import { avroType, avroTypeFor, decodeAvro, encodeAvro, frame, unframe } from '../../../src/codec/data/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { record } from './helpers.js';

const v1 = avroType(record([{ name: 'a', type: 'string' }], 'Evolving'));
const v2 = avroType(
  record(
    [
      { name: 'a', type: 'string' },
      { name: 'b', type: ['null', { type: 'long', logicalType: 'timestamp-millis' }], default: null },
      { name: 'c', type: 'int', default: 7 },
    ],
    'Evolving',
  ),
);

function codeOf(fn: () => unknown): [string, boolean] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return [(err as GatewayError).code, (err as GatewayError).retriable];
  }
  throw new Error('expected a GatewayError');
}

describe('decodeAvro with writer → reader resolution', () => {
  it('reads old data with a newer reader (defaults filled) and new data with an older reader (field dropped)', () => {
    expect(decodeAvro(v1, encodeAvro(v1, { a: 'x' }), v2)).toEqual({ a: 'x', b: null, c: 7 });
    expect(decodeAvro(v2, encodeAvro(v2, { a: 'y', b: '2022-03-15T12:00:00Z', c: 1 }), v1)).toEqual({ a: 'y' });
  });

  it('reports an incompatible reader as CEG_SCHEMA_INCOMPATIBLE', () => {
    const other = avroType(record([{ name: 'z', type: 'int' }], 'Evolving'));
    expect(codeOf(() => decodeAvro(v1, encodeAvro(v1, { a: 'x' }), other))).toEqual(['CEG_SCHEMA_INCOMPATIBLE', false]);
  });

  it('resolves decimals only with an equal scale', () => {
    const d = (scale: number) => avroType(record([{ name: 'p', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale } }], 'D'));
    const buf = encodeAvro(d(2), { p: '1.25' });
    expect(decodeAvro(d(2), buf, avroType(record([{ name: 'p', type: { type: 'bytes', logicalType: 'decimal', precision: 12, scale: 2 } }], 'D')))).toEqual({ p: '1.25' });
    expect(codeOf(() => decodeAvro(d(2), buf, d(3)))).toEqual(['CEG_SCHEMA_INCOMPATIBLE', false]);
  });

  it('reports truncated or trailing bytes as CEG_DECODE_FAILED', () => {
    const buf = encodeAvro(v2, { a: 'hello' });
    expect(codeOf(() => decodeAvro(v2, buf.subarray(0, 3)))).toEqual(['CEG_DECODE_FAILED', false]);
    expect(codeOf(() => decodeAvro(v2, Buffer.concat([buf, Buffer.from([0])])))).toEqual(['CEG_DECODE_FAILED', false]);
  });
});

describe('types are built once', () => {
  it('returns the same Type for the same schema text', () => {
    const text = record([{ name: 'q', type: 'string' }], 'Cached');
    expect(avroType(text)).toBe(avroType(text));
    expect(avroTypeFor(text)).toBe(avroType(text));
  });

  it('reports an invalid schema as CEG_SCHEMA_INVALID', () => {
    expect(codeOf(() => avroType('{"type":"nope"}'))).toEqual(['CEG_SCHEMA_INVALID', false]);
    expect(codeOf(() => avroType('not json'))).toEqual(['CEG_SCHEMA_INVALID', false]);
  });

  it('falls back to the underlying type for an invalid logical type (Avro spec)', () => {
    const t = avroType(record([{ name: 'p', type: { type: 'bytes', logicalType: 'decimal', precision: 2, scale: 5 } }], 'Bad'));
    expect(decodeAvro(t, encodeAvro(t, { p: 'AQ==' }))).toEqual({ p: 'AQ==' });
  });
});

describe('Confluent wire frame', () => {
  it('writes magic 0 and the big-endian id before the body, and splits it back', () => {
    const f = frame(0x01020304, Buffer.from([0xaa, 0xbb]));
    expect(f.toString('hex')).toBe('0001020304aabb');
    const u = unframe(f);
    expect(u.schemaId).toBe(0x01020304);
    expect(u.body.toString('hex')).toBe('aabb');
    expect(unframe(frame(0xffffffff, new Uint8Array())).schemaId).toBe(0xffffffff);
  });

  it('accepts a plain Uint8Array', () => {
    expect(unframe(new Uint8Array([0, 0, 0, 0, 9, 1])).schemaId).toBe(9);
  });

  it('refuses null, short values and a wrong magic byte', () => {
    for (const v of [null, undefined, Buffer.from([0, 0, 0, 1]), Buffer.from([1, 0, 0, 0, 1, 2]), Buffer.from('{"json":true}')]) {
      expect(codeOf(() => unframe(v))).toEqual(['CEG_NOT_REGISTRY_FRAMED', false]);
    }
  });

  it('refuses an id that is not an unsigned 32-bit integer', () => {
    expect(codeOf(() => frame(-1, Buffer.alloc(0)))).toEqual(['CEG_INVALID_OPTIONS', false]);
    expect(codeOf(() => frame(2 ** 32, Buffer.alloc(0)))).toEqual(['CEG_INVALID_OPTIONS', false]);
  });
});
