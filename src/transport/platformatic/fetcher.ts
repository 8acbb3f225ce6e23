/**
 * Fetches by offset without a consumer group: @platformatic/kafka exposes the Fetch API of a
 * Consumer directly (`consumer.fetch({ node, topics })`), so positions are ours and no group is
 * ever joined or created (the group id the library requires is never sent to the broker).
 * Used by the group-less read and, on a connection pool of its own, by group consumptions, so a
 * long-polling fetch never holds up the member's heartbeats and commits. Fetches go through a
 * {@link RawFetchPool}: Fetch v17 answers keep their record batches as bytes, read by
 * ./record-batches.ts (read_committed: markers and aborted transactions left out); answers of
 * other versions are parsed by the library and converted by ./records.ts.
 */
import { Consumer, FetchIsolationLevels, ListOffsetTimestamps } from '@platformatic/kafka';
import { GatewayError } from '../../core/errors.js';
import type { KafkaTransportOptions } from '../kafka/options.js';
import type { TransportRecord } from '../port.js';
import { baseOptions, closeForced } from './client-options.js';
import { fromPlatformaticError } from './errors.js';
import { OFFSET_OUT_OF_RANGE, RawFetchPool, UNKNOWN_TOPIC_CODES } from './raw-fetch.js';
import type { RawFetchPartition } from './raw-fetch.js';
import { readRecordBatches } from './record-batches.js';
import { decodeBatches } from './records.js';
import type { FetchedBatch } from './records.js';
import { listOffsetsTime } from '../timestamps.js';
import { topicMissing } from '../topics.js';
export { outOfRangeReset, outOfRangeWarning, recreatedTopicReset } from '../out-of-range.js';

/**
 * A group-less consumer for fetching and the connection pool its fetches go through
 * ({@link RawFetchPool}: record batches read by ./record-batches.ts). `close()` closes both, and
 * a fetch in flight then rejects at once ({@link FetcherClosed}).
 */
export interface Fetcher {
  readonly consumer: Consumer;
  readonly pool: RawFetchPool;
  /**
   * `work`'s outcome, or {@link FetcherClosed} as soon as close() is called (at once when it was):
   * what the library still does for `work` is then dropped. A settled call leaves nothing behind
   * (no reaction on a long-lived promise, which a race with one would pile up, one per fetch).
   */
  unlessClosed<T>(work: Promise<T>): Promise<T>;
  /**
   * Topics found missing (deleted while read), with when, ms since the epoch: their partitions are
   * left out of fetches until `recheckMs` has passed, then looked up again ({@link fetchOnce}).
   */
  readonly missing: Map<string, number>;
  /** How long a missing topic is left out before it is looked up again, ms: the transport's `metadataMaxAgeMs`. */
  readonly recheckMs: number;
  /** Told when a topic goes missing and when it is back (the consumption logs it). */
  readonly logger: KafkaTransportOptions['logger'];
  close(): Promise<void>;
}

/**
 * What a fetch in flight rejects with once its fetcher is closed. The library retries a fetch whose
 * connection was closed under it (`retries` times, `retryDelay` apart: about 1.5 s with the
 * defaults) before it fails, and every stop waited for that: a gateway with no work in hand took
 * 3 s to shut down on this client, the definitions and replay-audit readers one after the other
 * (more than a SHUTDOWN_TIMEOUT_MS of 4 s with one push subscription). Retriable: a stop, not a fault.
 */
export class FetcherClosed extends GatewayError {
  constructor() {
    super('CEG_CLOSED', 'fetch cut short: the fetcher was closed', { retriable: true });
  }
}

/** A {@link Fetcher} with the transport's connection settings; `groupId` is required by the library but never sent. */
export function openFetcher(opts: KafkaTransportOptions, clientIdSuffix: string, groupId: string): Fetcher {
  const options = baseOptions(opts, clientIdSuffix);
  const consumer = new Consumer({ ...options, groupId });
  const pool = new RawFetchPool(options.clientId, options);
  let isClosed = false;
  const waiting = new Set<(err: FetcherClosed) => void>();
  return {
    consumer,
    pool,
    missing: new Map(),
    recheckMs: opts.metadataMaxAgeMs,
    logger: opts.logger,
    unlessClosed<T>(work: Promise<T>): Promise<T> {
      if (isClosed) {
        work.catch(() => undefined); // dropped: its failure is the closed connection's
        return Promise.reject(new FetcherClosed());
      }
      return new Promise<T>((resolve, reject) => {
        waiting.add(reject);
        work.then(
          (value) => {
            waiting.delete(reject);
            resolve(value);
          },
          (err: unknown) => {
            waiting.delete(reject);
            reject(err instanceof Error ? err : new Error(String(err), { cause: err }));
          },
        );
      });
    },
    close: async () => {
      isClosed = true;
      for (const reject of waiting) reject(new FetcherClosed());
      waiting.clear();
      const closed = await Promise.allSettled([closeForced(consumer), pool.close()]);
      const failed = closed.find((c): c is PromiseRejectedResult => c.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
    },
  };
}

/** One partition to fetch: `offset` is the next offset wanted. */
export interface FetchPosition {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

/** What one fetch brought for one partition: its records (maybe none) and the next offset to ask for. */
export interface Fetched {
  readonly topic: string;
  readonly partition: number;
  readonly records: readonly TransportRecord[];
  readonly next: bigint;
  /**
   * true: the broker answered OFFSET_OUT_OF_RANGE for the offset asked (below the log start or
   * past the end); no records, `next` is the offset asked. The caller chooses where the partition
   * goes on (src/transport/out-of-range.ts).
   */
  readonly outOfRange?: true;
  /**
   * With `outOfRange`: the partition's topic was missing (deleted) and is there again, a new topic
   * under the name: the caller goes on from its log start whatever the offset asked
   * ({@link recreatedTopicReset}). Not fetched in that call.
   */
  readonly recreated?: true;
}

export const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** Fetch limits. Units: ms, bytes. */
export interface FetchLimits {
  readonly maxWaitTimeMs: number;
  /** Bytes the broker waits for (up to `maxWaitTimeMs`) before it answers; default 1. */
  readonly minBytes?: number;
  readonly maxBytes: number;
  readonly maxBytesPerPartition: number;
}

/**
 * One Fetch request per partition leader, in parallel; resolves with every partition's records.
 * A topic that no longer exists (deleted by an operator while read) does not stop the others, as
 * in Kafka's Java consumer: its partitions are left out (no entry in the answer, so their position
 * stays) and logged once; it is looked up again every `recheckMs` and, once created again, its
 * partitions are answered `outOfRange` + `recreated` (the caller goes on from the new log start). Before, every
 * fetch failed (its metadata look-up, or the broker's UNKNOWN_TOPIC_ID for that one partition) and
 * a group reading the deleted topic with others delivered nothing until it gave up.
 * When nothing is left to fetch, waits `maxWaitTimeMs` (as a long poll would) and resolves empty.
 * Errors: the library's error (the caller maps it with fromPlatformaticError); metadata is
 * refreshed on the next call after a failure; {@link FetcherClosed} at once when the fetcher is
 * closed meanwhile (what the library still does for it is dropped).
 */
export function fetchOnce(fetcher: Fetcher, positions: readonly FetchPosition[], limits: FetchLimits): Promise<Fetched[]> {
  if (positions.length === 0) return Promise.resolve([]);
  // One wrapper per fetch (not per record): a stop does not wait for the library's retries.
  return fetcher.unlessClosed(fetchFromLeaders(fetcher, positions, limits));
}

async function fetchFromLeaders(fetcher: Fetcher, positions: readonly FetchPosition[], limits: FetchLimits): Promise<Fetched[]> {
  const consumer = fetcher.consumer;
  const now = Date.now();
  const asked = positions.filter((p) => {
    const since = fetcher.missing.get(p.topic);
    return since === undefined || now - since >= fetcher.recheckMs;
  });
  const returned = new Set<string>();
  const metadata = await metadataOfPresent(fetcher, [...new Set(asked.map((p) => p.topic))], returned);
  const out: Fetched[] = [];
  type LeaderTopic = { topicId: string; partitions: { partition: number; fetchOffset: bigint; partitionMaxBytes: number; currentLeaderEpoch: number; lastFetchedEpoch: number }[] };
  const byLeader = new Map<number, Map<string, LeaderTopic>>();
  const namesById = new Map<string, string>();
  for (const p of asked) {
    if (returned.has(p.topic)) {
      out.push({ topic: p.topic, partition: p.partition, records: [], next: p.offset, outOfRange: true, recreated: true });
      continue;
    }
    const t = metadata.get(p.topic);
    const leader = t?.partitions[p.partition]?.leader;
    if (t === undefined || leader === undefined) continue;
    namesById.set(t.id, p.topic);
    let forLeader = byLeader.get(leader);
    if (forLeader === undefined) byLeader.set(leader, (forLeader = new Map<string, LeaderTopic>()));
    let entry = forLeader.get(p.topic);
    if (entry === undefined) forLeader.set(p.topic, (entry = { topicId: t.id, partitions: [] }));
    entry.partitions.push({ partition: p.partition, fetchOffset: p.offset, partitionMaxBytes: limits.maxBytesPerPartition, currentLeaderEpoch: -1, lastFetchedEpoch: -1 });
  }
  if (byLeader.size === 0) {
    if (out.length === 0) await new Promise((r) => setTimeout(r, limits.maxWaitTimeMs).unref());
    return out;
  }
  const from = new Map(asked.map((p) => [tpKey(p.topic, p.partition), p.offset]));
  const answers = await Promise.all(
    [...byLeader].map(([node, topicsOfLeader]) =>
      consumer.fetch({
        node,
        topics: [...topicsOfLeader.values()],
        maxWaitTime: limits.maxWaitTimeMs,
        minBytes: limits.minBytes ?? 1,
        maxBytes: limits.maxBytes,
        isolationLevel: FetchIsolationLevels.READ_COMMITTED,
        connectionPool: fetcher.pool,
      }),
    ),
  );
  for (const answer of answers) {
    for (const t of answer.responses) {
      const topic = namesById.get(t.topicId);
      if (topic === undefined) continue;
      for (const p of t.partitions as unknown as (RawFetchPartition | { partitionIndex: number; errorCode?: undefined; records?: FetchedBatch[]; raw?: undefined })[]) {
        const start = from.get(tpKey(topic, p.partitionIndex));
        if (start === undefined) continue;
        if (p.errorCode !== undefined && UNKNOWN_TOPIC_CODES.has(p.errorCode)) {
          goneMissing(fetcher, topic, Date.now());
          continue;
        }
        if (p.errorCode === OFFSET_OUT_OF_RANGE) {
          out.push({ topic, partition: p.partitionIndex, records: [], next: start, outOfRange: true });
          continue;
        }
        // Fetch v17 answers come as bytes (./raw-fetch.ts); an older broker's, parsed by the library.
        const { records, next } =
          p.raw !== undefined ? readRecordBatches(topic, p.partitionIndex, p.raw, start, (p).abortedTransactions) : decodeBatches(topic, p.partitionIndex, (p.records ?? []) as FetchedBatch[], start);
        out.push({ topic, partition: p.partitionIndex, records, next });
      }
    }
  }
  return out;
}

/**
 * The metadata of each of `topics` that exists, by name: one look-up for all; when that one fails
 * because a topic is unknown, one per topic, and those unknown are marked missing on `fetcher`.
 * A topic marked missing that is found again is unmarked (logged) and added to `returned`.
 * Errors: the library's, for any failure other than an unknown topic.
 */
async function metadataOfPresent(fetcher: Fetcher, topics: readonly string[], returned: Set<string>): Promise<Map<string, { readonly id: string; readonly partitions: readonly ({ readonly leader: number } | undefined)[] }>> {
  const found = new Map<string, { readonly id: string; readonly partitions: readonly ({ readonly leader: number } | undefined)[] }>();
  if (topics.length === 0) return found;
  const unknown = (err: unknown): boolean => topicMissing(fromPlatformaticError(err, { operation: 'consume' }));
  let whole;
  try {
    whole = await fetcher.consumer.metadata({ topics: [...topics] });
  } catch (err) {
    if (!unknown(err)) throw err;
  }
  if (whole !== undefined) {
    for (const topic of topics) {
      const t = whole.topics.get(topic);
      if (t !== undefined) found.set(topic, t);
    }
  } else {
    const each = await Promise.allSettled(topics.map((topic) => fetcher.consumer.metadata({ topics: [topic] })));
    for (const [i, r] of each.entries()) {
      const topic = topics[i]!;
      if (r.status === 'rejected') {
        if (!unknown(r.reason)) throw r.reason;
        goneMissing(fetcher, topic, Date.now());
        continue;
      }
      const t = r.value.topics.get(topic);
      if (t !== undefined) found.set(topic, t);
    }
  }
  for (const topic of found.keys()) {
    if (!fetcher.missing.delete(topic)) continue;
    returned.add(topic);
    fetcher.logger.info({ topic }, 'a topic that was missing is there again (created again): its partitions are read from its log start');
  }
  return found;
}

/** Marks `topic` missing on `fetcher` (logged when it was not yet) and drops the cached metadata, which still names it. */
function goneMissing(fetcher: Fetcher, topic: string, atMs: number): void {
  if (!fetcher.missing.has(topic)) {
    fetcher.logger.warn({ topic, recheckMs: fetcher.recheckMs }, 'a topic being read no longer exists (deleted?): its partitions are left out of fetches and the topic is looked up again every recheckMs; the other topics go on');
  }
  fetcher.missing.set(topic, atMs);
  fetcher.consumer.clearMetadata();
}

/** Partition counts and offsets (earliest, latest, or the first at/after a time) per partition of one topic. */
export async function listOffsets(consumer: Consumer, topic: string, at: 'earliest' | 'latest' | { readonly timestampMs: number }): Promise<bigint[]> {
  const timestamp = at === 'earliest' ? ListOffsetTimestamps.EARLIEST : at === 'latest' ? ListOffsetTimestamps.LATEST : BigInt(listOffsetsTime(at.timestampMs));
  const offsets = await consumer.listOffsets({ topics: [topic], timestamp });
  return [...(offsets.get(topic) ?? [])];
}
