import { describe, expect, it } from 'vitest';
import { murmur2, partitionForKey, toPositive } from '../../../src/transport/partitioner.js';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Independent reference: the same algorithm written with BigInt arithmetic mod 2^32. */
function referenceMurmur2(data: Uint8Array): number {
  const MASK = 0xffffffffn;
  const m = 0x5bd1e995n;
  const mul = (a: bigint, b: bigint): bigint => (a * b) & MASK;
  let h = (0x9747b28cn ^ BigInt(data.length)) & MASK;
  const n4 = Math.floor(data.length / 4);
  for (let i = 0; i < n4; i++) {
    let k = BigInt(data[4 * i]!) | (BigInt(data[4 * i + 1]!) << 8n) | (BigInt(data[4 * i + 2]!) << 16n) | (BigInt(data[4 * i + 3]!) << 24n);
    k = mul(k, m);
    k ^= k >> 24n;
    k = mul(k, m);
    h = mul(h, m) ^ k;
  }
  const t = n4 * 4;
  const rest = data.length % 4;
  if (rest === 3) h ^= BigInt(data[t + 2]!) << 16n;
  if (rest >= 2) h ^= BigInt(data[t + 1]!) << 8n;
  if (rest >= 1) h = mul(h ^ BigInt(data[t]!), m);
  h ^= h >> 13n;
  h = mul(h, m);
  h ^= h >> 15n;
  return Number(BigInt.asIntN(32, h));
}

describe('murmur2 (Java Utils.murmur2)', () => {
  it('hashes the empty key to the value derived by hand from the seed', () => {
    // h = seed ^ 0 = 0x9747b28c; h ^= h>>>13 → 0x9747b28c ^ 0x0004ba3d = 0x974308b1;
    // h *= 0x5bd1e995 (mod 2^32) → 0x106e2805; h ^= h>>>15 (0x000020dc) → 0x106e08d9 = 275646681.
    // kafka-clients 4.1.1 Utils.murmur2(new byte[0]) prints the same.
    expect(murmur2(new Uint8Array(0))).toBe(275646681);
    expect(referenceMurmur2(new Uint8Array(0))).toBe(275646681);
  });

  it('matches the vectors published in Kafka\'s UtilsTest', () => {
    expect(murmur2(utf8('21'))).toBe(-973932308);
    expect(murmur2(utf8('foobar'))).toBe(-790332482);
    expect(murmur2(utf8('a-little-bit-long-string'))).toBe(-985981536);
    expect(murmur2(utf8('a-little-bit-longer-string'))).toBe(-1486304829);
    expect(murmur2(utf8('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'))).toBe(-58897971);
    expect(murmur2(utf8('abc'))).toBe(479470107);
  });

  it('covers every tail length (0–3 trailing bytes) and bytes ≥ 0x80', () => {
    // Values printed by org.apache.kafka.common.utils.Utils.murmur2 from kafka-clients 4.1.1.
    expect(murmur2(utf8('a'))).toBe(-1563381124);
    expect(murmur2(utf8('ab'))).toBe(316155434);
    expect(murmur2(utf8('abcd'))).toBe(-1323649548);
    expect(murmur2(Uint8Array.of(0xff, 0x80, 0x00, 0x7f, 0xfe))).toBe(768357719);
    expect(murmur2(utf8('ü-€-漢字'))).toBe(-665715106);
    expect(murmur2(utf8('😀'))).toBe(131881617);
  });

  it('agrees with the BigInt reference on pseudo-random inputs of every length 0–64', () => {
    let seed = 12345;
    const next = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24;
    for (let len = 0; len <= 64; len++) {
      const bytes = Uint8Array.from({ length: len }, next);
      expect(murmur2(bytes)).toBe(referenceMurmur2(bytes));
    }
  });
});

describe('partitionForKey', () => {
  it('is toPositive(murmur2) modulo the partition count', () => {
    expect(partitionForKey(utf8('EUR-USD_H4'), 7)).toBe(2);
    expect(partitionForKey(utf8('ü-€-漢字'), 7)).toBe(2);
    expect(partitionForKey(utf8('😀'), 7)).toBe(0);
    expect(partitionForKey(utf8('21'), 7)).toBe(3);
    expect(partitionForKey(utf8('a-little-bit-long-string'), 7)).toBe(1);
    expect(partitionForKey(utf8('anything'), 1)).toBe(0);
  });

  it('clears the sign bit instead of taking the absolute value', () => {
    expect(toPositive(-1)).toBe(0x7fffffff);
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(-973932308)).toBe(1173551340);
  });

  it('rejects a partition count that is not a positive integer', () => {
    expect(() => partitionForKey(utf8('k'), 0)).toThrow(RangeError);
    expect(() => partitionForKey(utf8('k'), 2.5)).toThrow(RangeError);
  });
});
