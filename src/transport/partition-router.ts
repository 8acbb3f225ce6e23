import { GatewayError } from '../core/errors.js';
import type { RetryPolicy } from '../core/retry.js';
import { retrying } from '../core/retrying.js';
import { METADATA_CATCH_UP } from './metadata-catch-up.js';
import { partitionForKey } from './partitioner.js';
import type { OutboundRecord } from './port.js';

/** An answer that does not cover the partition asked for yet (retried by countCovering, never thrown out of it). */
const NOT_COVERED = new Error('the partition count does not cover the partition yet');

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
  /** Look-ups of a topic's count in flight: one per topic, shared by every caller meanwhile. */
  readonly #lookups = new Map<string, Promise<number>>();
  readonly #maxAgeMs: number;
  readonly #coverRetry: RetryPolicy;
  #sweptAtMs = Date.now();

  /**
   * @param maxAgeMs how long a topic's partition count is used before it is asked again, ms
   *   (Kafka's `metadata.max.age.ms`).
   * @param coverRetry how often and how far apart {@link countCovering} asks again for a count that
   *   covers a named partition before the caller refuses it (default {@link METADATA_CATCH_UP}:
   *   the broker's metadata takes up added partitions a moment late).
   */
  constructor(maxAgeMs: number, coverRetry: RetryPolicy = METADATA_CATCH_UP) {
    this.#maxAgeMs = maxAgeMs;
    this.#coverRetry = coverRetry;
  }

  /**
   * The partition count of `topic`: the cached one while younger than `maxAgeMs`, else `lookup()`'s
   * answer (which then is cached; callers meanwhile share that one look-up). Errors: whatever
   * `lookup` throws (nothing is cached then).
   */
  async count(topic: string, lookup: () => Promise<number>): Promise<number> {
    const cached = this.#counts.get(topic);
    if (cached !== undefined && Date.now() - cached.atMs < this.#maxAgeMs) return cached.count;
    return this.#lookUp(topic, lookup);
  }

  /** `lookup()`, one per topic at a time (a second caller gets the first one's answer), cached. */
  #lookUp(topic: string, lookup: () => Promise<number>): Promise<number> {
    const inFlight = this.#lookups.get(topic);
    if (inFlight !== undefined) return inFlight;
    const asked = lookup().then(
      (count) => {
        this.#counts.set(topic, { count, atMs: Date.now() });
        this.#sweep();
        return count;
      },
    ).finally(() => this.#lookups.delete(topic));
    this.#lookups.set(topic, asked);
    return asked;
  }

  /**
   * The partition count of `topic` asked of the broker again after a send routed over `used`
   * partitions was refused for a partition the topic does not have: the topic was deleted and
   * created again with fewer partitions while the cached count (younger than `maxAgeMs`) still
   * had the old one. Bounded: a look-up in flight is shared, and a count cached since that differs
   * from `used` (another send's refusal asked already) is answered without asking — sends refused
   * together make one metadata request, not one each. Errors: whatever `lookup` throws.
   */
  recount(topic: string, used: number, lookup: () => Promise<number>): Promise<number> {
    const cached = this.#counts.get(topic);
    if (!this.#lookups.has(topic) && cached !== undefined && cached.count !== used) return Promise.resolve(cached.count);
    return this.#lookUp(topic, lookup);
  }

  /**
   * Sends `records` of `topic` routed over `count` partitions: `send` is given each record's
   * partition ({@link partitionOf}). When it fails with an error `beyondTopic` recognizes (a
   * partition chosen that the producer's fresh metadata or the broker says the topic does not
   * have), the count is asked again ({@link recount}); if it changed, the records are routed over
   * the new count (a key to murmur2(key) mod the new count) and `send` runs once more. So a topic
   * deleted and created again with fewer partitions is written to at once, not refused until the
   * cached count ages out (`maxAgeMs`). Errors: `send`'s (the first one's when the count is the
   * same, or cannot be asked: an unknown topic stays that); CEG_INVALID_OPTIONS (not retriable)
   * for an explicit partition outside the new count.
   */
  async sendRouted<T>(
    topic: string,
    records: readonly OutboundRecord[],
    count: number,
    lookup: () => Promise<number>,
    send: (partitionOf: (r: OutboundRecord, index: number) => number) => Promise<T>,
    beyondTopic: (err: unknown) => boolean,
  ): Promise<T> {
    try {
      return await send((r, index) => this.partitionOf(topic, r, index, count));
    } catch (err) {
      if (!beyondTopic(err)) throw err;
      const fresh = await this.recount(topic, count, lookup).catch(() => count);
      if (fresh === count) throw err;
      return send((r, index) => this.partitionOf(topic, r, index, fresh));
    }
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
   * partition as outside the topic; while the answer still does not cover it, asked again as
   * `coverRetry` says (the broker's metadata may not have the added partitions yet). The last
   * answer is returned; the caller refuses what it does not cover. Errors: whatever `lookup` throws.
   */
  async countCovering(topic: string, partitions: readonly number[], lookup: () => Promise<number>): Promise<number> {
    let count = await this.count(topic, lookup);
    const highest = Math.max(...partitions);
    if (highest < count || !Number.isSafeInteger(highest)) return count;
    const covering = async (): Promise<number> => {
      this.#counts.delete(topic);
      count = await this.#lookUp(topic, lookup);
      if (highest >= count) throw NOT_COVERED;
      return count;
    };
    return retrying(covering, { policy: this.#coverRetry, classify: (err) => err === NOT_COVERED }).catch((err: unknown) => {
      if (err === NOT_COVERED) return count;
      throw err;
    });
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
    for (const r of records) if (r.partition !== undefined && Number.isSafeInteger(r.partition) && r.partition > highest) highest = r.partition;
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
