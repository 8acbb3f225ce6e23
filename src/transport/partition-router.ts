import { GatewayError } from '../core/errors.js';
import { partitionForKey } from './partitioner.js';
import type { OutboundRecord } from './port.js';

/**
 * Where a Kafka adapter's records go, chosen before the send so the position of every record is
 * known: an explicit partition as given, a key by the Java-compatible murmur2 partitioner, a null
 * key round-robin per topic. Also caches each topic's partition count for `maxAgeMs` (ms; Kafka's
 * `metadata.max.age.ms`). Shared by the kafkajs and @platformatic/kafka adapters.
 * Bounded: a count older than `maxAgeMs` is dropped (with its topic's round-robin position) at the
 * next lookup at least `maxAgeMs` after the previous sweep, so the caches hold the topics written
 * within the last two `maxAgeMs`, not every topic the process ever wrote to (each deleted
 * subscription's dead-letter, retry and redrive topics stayed for the life of the process).
 * Spec: DESIGN "Kafka mapping" (key → partition as Java producers do).
 */
export class PartitionRouter {
  readonly #counts = new Map<string, { readonly count: number; readonly atMs: number }>();
  readonly #roundRobin = new Map<string, number>();
  readonly #maxAgeMs: number;
  #sweptAtMs = Date.now();

  constructor(maxAgeMs: number) {
    this.#maxAgeMs = maxAgeMs;
  }

  /**
   * The partition count of `topic`: the cached one while younger than `maxAgeMs`, else `lookup()`'s
   * answer (which then is cached). Errors: whatever `lookup` throws (nothing is cached then).
   */
  async count(topic: string, lookup: () => Promise<number>): Promise<number> {
    const cached = this.#counts.get(topic);
    if (cached !== undefined && Date.now() - cached.atMs < this.#maxAgeMs) return cached.count;
    const count = await lookup();
    this.#counts.set(topic, { count, atMs: Date.now() });
    this.#sweep();
    return count;
  }

  /** Topics cached now (a count, a round-robin position or both). */
  get size(): number {
    return new Set([...this.#counts.keys(), ...this.#roundRobin.keys()]).size;
  }

  /** Drops counts older than `maxAgeMs` and their topics' round-robin positions; one pass at most once per `maxAgeMs`. */
  #sweep(): void {
    const now = Date.now();
    if (now - this.#sweptAtMs <= this.#maxAgeMs) return;
    this.#sweptAtMs = now;
    for (const [topic, c] of this.#counts) if (now - c.atMs >= this.#maxAgeMs) this.#counts.delete(topic);
    for (const topic of this.#roundRobin.keys()) if (!this.#counts.has(topic)) this.#roundRobin.delete(topic);
  }

  /**
   * The partition count of `topic` for offsets on `partitions`: the cached one, unless one of them
   * is not below it — partitions may have been added since it was cached (`kafka-topics --alter
   * --partitions`), so then `lookup()` is asked again (and cached) before the caller refuses the
   * partition as outside the topic. Errors: whatever `lookup` throws.
   */
  async countCovering(topic: string, partitions: readonly number[], lookup: () => Promise<number>): Promise<number> {
    const count = await this.count(topic, lookup);
    if (partitions.every((p) => p < count)) return count;
    this.#counts.delete(topic);
    return this.count(topic, lookup);
  }

  /**
   * The partition count of `topic` for a send of `records`: the cached one, unless a record names
   * an explicit partition not below it — then asked of the broker again (`countCovering`), so a
   * partition added by `kafka-topics --alter --partitions` is written to at once rather than
   * refused until the cached count ages out (`maxAgeMs`). Errors: whatever `lookup` throws.
   */
  async countForRecords(topic: string, records: readonly OutboundRecord[], lookup: () => Promise<number>): Promise<number> {
    const count = await this.count(topic, lookup);
    let highest = -1;
    for (const r of records) if (r.partition !== undefined && r.partition > highest) highest = r.partition;
    return highest < count ? count : this.countCovering(topic, [highest], lookup);
  }

  /** Drops the cached count (e.g. after the broker answered "unknown topic"). */
  forget(topic: string): void {
    this.#counts.delete(topic);
  }

  /**
   * The partition of record `index` of a send to `topic` of `count` partitions.
   * Errors: `CEG_INVALID_OPTIONS` (not retriable) naming the record whose explicit partition is
   * outside 0…count−1.
   */
  partitionOf(topic: string, r: OutboundRecord, index: number, count: number): number {
    if (r.partition !== undefined) {
      if (!Number.isInteger(r.partition) || r.partition < 0 || r.partition >= count) {
        throw new GatewayError('CEG_INVALID_OPTIONS', `record ${index}: partition ${r.partition} outside 0…${count - 1} of ${topic}`, {
          retriable: false,
          details: { topic, index, field: 'partition' },
        });
      }
      return r.partition;
    }
    if (r.key !== null) return partitionForKey(r.key, count);
    const n = this.#roundRobin.get(topic) ?? 0;
    this.#roundRobin.set(topic, n + 1);
    return n % count;
  }
}
