/**
 * Schema problems that avsc found first used to be reported at `/` with avsc's words (break report
 * findings 3 and 4): each is now found by this project's validation and named at its field path.
 * Spec: Avro 1.11 §"Names" (primitive names in no namespace; a name without a dot is in the
 * enclosing namespace), §"Complex Types" → Records (JSON encoding of defaults: long = integer,
 * float/double = number); RFC 8259 §8.1 (byte order mark).
 */
import { describe, expect, it } from 'vitest';
import { analyzeAvroSchema } from '../../../src/registry/avro/index.js';

const rec = (fields: object[]): string => JSON.stringify({ type: 'record', name: 'R', namespace: 'ns', fields });
const problems = (text: string): { path: string; message: string }[] => [...analyzeAvroSchema(text).problems];

describe('problems named at their field path', () => {
  it('a long default beyond ±(2^53−2) (avsc\'s bound) or outside the long range', () => {
    // 9007199254740993 is written in the file; JSON.parse reads 9007199254740992.
    const big = problems(rec([]).replace('"fields":[]', '"fields":[{"name":"l","type":"long","default":9007199254740993}]'));
    expect(big).toEqual([{ path: '/fields/l', message: expect.stringContaining('is beyond ±9007199254740990 (2^53−2)') }]);
    expect(problems(rec([{ name: 'l', type: 'long', default: 1e20 }]))).toEqual([{ path: '/fields/l', message: 'invalid default: 100000000000000000000 is outside the long range (−2^63 to 2^63−1)' }]);
    expect(problems(rec([{ name: 'a', type: { type: 'array', items: 'long' }, default: [2 ** 60] }]))).toEqual([{ path: '/fields/a', message: expect.stringContaining('item 1152921504606847000 (as read') }]);
    expect(problems(rec([{ name: 'l', type: 'long', default: 9007199254740991 }]))).toEqual([{ path: '/fields/l', message: expect.stringContaining('is beyond') }]);
    expect(problems(rec([{ name: 'l', type: 'long', default: -9007199254740990 }]))).toEqual([]);
  });

  it('"NaN", "Infinity", "-Infinity" as float or double defaults, also as a union\'s first branch', () => {
    for (const [type, value] of [['double', 'NaN'], ['float', 'Infinity'], ['double', '-Infinity']] as const) {
      expect(problems(rec([{ name: 'd', type, default: value }]))).toEqual([{ path: '/fields/d', message: expect.stringContaining(`"${value}" is not a ${type} default`) }]);
    }
    expect(problems(rec([{ name: 'd', type: ['double', 'null'], default: 'NaN' }]))).toEqual([{ path: '/fields/d', message: expect.stringContaining('"NaN" is not a double default') }]);
    expect(problems(rec([{ name: 'd', type: 'double', default: 1.5 }]))).toEqual([]);
  });

  it('a record named after a primitive type inside a namespace', () => {
    expect(problems(rec([{ name: 'x', type: { type: 'record', name: 'int', fields: [] } }]))).toEqual([
      { path: '/fields/x', message: 'record may not be named after the primitive type int (not even in namespace ns: primitive type names may not be defined in any namespace)' },
    ]);
  });

  it('a null-namespace type referenced by its bare name from inside a namespace', () => {
    const text = JSON.stringify({
      type: 'record',
      name: 'Outer',
      fields: [
        { name: 'a', type: { type: 'record', name: 'N', fields: [] } },
        { name: 'b', type: { type: 'record', name: 'Inner', namespace: 'ns', fields: [{ name: 'n', type: 'N' }] } },
      ],
    });
    expect(problems(text)).toEqual([{ path: '/fields/b/fields/n', message: expect.stringContaining('unknown type "N": inside namespace ns it means ns.N') }]);
    // The same reference outside any namespace is fine.
    const plain = JSON.stringify({ type: 'record', name: 'Outer', fields: [{ name: 'a', type: { type: 'record', name: 'N', fields: [] } }, { name: 'b', type: 'N' }] });
    expect(problems(plain)).toEqual([]);
  });

  it('a record default leaving out a field named like an Object.prototype property (constructor, toString)', () => {
    // The spec fills a left-out field from its own default; avsc reads Object.prototype's function
    // instead and refuses the schema, so the field is named with that reason. It used to be judged
    // as the inherited function ("undefined is not a string"), and a field without a default of
    // its own was not called missing.
    const inner = (name: string, own?: string): object => ({ type: 'record', name: 'Inner', fields: [{ name, type: 'string', ...(own === undefined ? {} : { default: own }) }] });
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      expect(problems(rec([{ name: 'i', type: inner(name, 'x'), default: {} }]))).toEqual([{ path: '/fields/i', message: expect.stringContaining(`field "${name}" must be written in the default: avsc`) }]);
      expect(problems(rec([{ name: 'i', type: inner(name), default: {} }]))).toEqual([{ path: '/fields/i', message: `invalid default: field "${name}" is missing (it has no default of its own)` }]);
      expect(problems(rec([{ name: 'i', type: inner(name), default: { [name]: 'y' } }]))).toEqual([]);
      expect(problems(rec([{ name: 'i', type: inner(name), default: { [name]: 1 } }]))).toEqual([{ path: '/fields/i', message: `invalid default: field "${name}": 1 is not a string` }]);
    }
  });

  it('a UTF-8 byte-order mark at the start is named as such', () => {
    expect(problems(`\uFEFF${rec([])}`)).toEqual([{ path: '/', message: 'starts with a UTF-8 byte-order mark (U+FEFF): save the file as UTF-8 without BOM' }]);
  });
});
