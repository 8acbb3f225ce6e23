/**
 * Kafka's default partitioner for keyed records, as the Java client computes it, so that the
 * memory transport, the Kafka transport and any Java producer place one key on one partition.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/**
 * 32-bit MurmurHash2 with Kafka's seed, over raw bytes; returns a signed 32-bit integer exactly as
 * Java's `org.apache.kafka.common.utils.Utils.murmur2(byte[])` does (int overflow wraps).
 * Cost: one pass over the bytes, no allocation.
 * Spec: Apache Kafka clients, `Utils.murmur2` (MurmurHash2 by Austin Appleby, seed 0x9747b28c).
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const blocks = length >>> 2;
  for (let i = 0; i < blocks; i++) {
    const j = i << 2;
    // Little-endian 4-byte word; bytes are unsigned (Java masks with 0xff).
    let k = (data[j]! | (data[j + 1]! << 8) | (data[j + 2]! << 16) | (data[j + 3]! << 24)) | 0;
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  const tail = blocks << 2;
  const rest = length & 3;
  // Java's switch falls through from 3 to 2 to 1; the multiply belongs to case 1.
  if (rest === 3) h ^= data[tail + 2]! << 16;
  if (rest >= 2) h ^= data[tail + 1]! << 8;
  if (rest >= 1) {
    h ^= data[tail]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Java `Utils.toPositive`: clears the sign bit (not `Math.abs`, which fails on MIN_VALUE). */
export function toPositive(n: number): number {
  return n & 0x7fffffff;
}

/**
 * Partition for a keyed record: `toPositive(murmur2(key)) % numPartitions`.
 * Units: `numPartitions` is a count ≥ 1; returns 0 … numPartitions − 1.
 * Errors: RangeError when `numPartitions` is not a positive integer (a programming error).
 * Spec: Apache Kafka clients `BuiltInPartitioner.partitionForKey` (the default partitioner for
 *   records with a key); DESIGN "Kafka mapping" (order per key).
 */
export function partitionForKey(key: Uint8Array, numPartitions: number): number {
  if (!Number.isInteger(numPartitions) || numPartitions < 1) {
    throw new RangeError(`numPartitions must be a positive integer, got ${numPartitions}`);
  }
  return toPositive(murmur2(key)) % numPartitions;
}
