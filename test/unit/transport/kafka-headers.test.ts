import { describe, expect, it } from 'vitest';
import { fromKafkaHeaders, toBytes, toKafkaHeaders } from '../../../src/transport/kafka/headers.js';
import type { RecordHeader } from '../../../src/transport/port.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const plain = (h: readonly RecordHeader[]): [string, number[]][] => h.map(([n, v]) => [n, Array.from(v)]);

describe('kafka headers', () => {
  it('turns port headers into a kafkajs object, repeats as arrays in order, without copying', () => {
    const backing = Uint8Array.of(9, 1, 2, 3, 9);
    const slice = backing.subarray(1, 4);
    const out = toKafkaHeaders([['a', bytes('1')], ['rep', bytes('x')], ['b', slice], ['rep', bytes('y')]]);
    expect(Object.keys(out)).toEqual(['a', 'rep', 'b']);
    expect(out.rep).toEqual([Buffer.from('x'), Buffer.from('y')]);
    const b = out.b as Buffer;
    expect(Array.from(b)).toEqual([1, 2, 3]);
    expect(b.buffer).toBe(backing.buffer);
  });

  it('normalises Buffer, string, null and arrays of them into ordered pairs, keeping repeats', () => {
    const headers = {
      ce_id: Buffer.from('id-1'),
      text: 'ü€',
      rep: [Buffer.from('one'), 'two', Buffer.from([0, 255])],
      nothing: undefined,
    };
    const out = fromKafkaHeaders(headers);
    expect(plain(out)).toEqual([
      ['ce_id', Array.from(bytes('id-1'))],
      ['text', Array.from(bytes('ü€'))],
      ['rep', Array.from(bytes('one'))],
      ['rep', Array.from(bytes('two'))],
      ['rep', [0, 255]],
      ['nothing', []],
    ]);
    expect(out.every(([, v]) => v instanceof Uint8Array)).toBe(true);
    // kafkajs's Buffers pass as they are: no second view object per value.
    expect(out[0]![1]).toBe(headers.ce_id);
    expect(fromKafkaHeaders(undefined)).toEqual([]);
  });

  it('hands a Buffer on as it is (a Uint8Array over the fetched memory, no copy), strings as UTF-8, null as empty bytes', () => {
    const buf = Buffer.from('abc');
    const v = toBytes(buf);
    expect(v).toBe(buf);
    expect(v).toBeInstanceOf(Uint8Array);
    expect(Array.from(toBytes('ü'))).toEqual(Array.from(bytes('ü')));
    expect(toBytes(null)).toEqual(new Uint8Array(0));
    expect(toBytes(undefined).byteLength).toBe(0);
  });

  it('round-trips non-interleaved headers exactly', () => {
    const original: RecordHeader[] = [['ce_type', bytes('t')], ['x', bytes('1')], ['x', bytes('2')], ['bin', Uint8Array.of(0, 128)]];
    expect(plain(fromKafkaHeaders(toKafkaHeaders(original)))).toEqual(plain(original));
  });
});
