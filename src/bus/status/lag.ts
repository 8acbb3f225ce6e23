/**
 * Lag of a consumer group, exact from Kafka: per partition of each topic, the end offset (the next
 * offset to be written) minus the group's committed offset (the next it will read). Works whether
 * or not the group has members, on any instance.
 * Spec: issue 10 ("lag per partition"); Kafka ListOffsets and OffsetFetch (what
 *   `kafka-consumer-groups --describe` shows as LAG).
 */
import { GatewayError } from '../../core/errors.js';
import type { CommittedOffset, PartitionOffset, TopicPartitionOffset, Transport } from '../../transport/port.js';
import { eachLimited } from '../subscriptions/work-check.js';

export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  /** Next offset to be written, decimal text. */
  readonly endOffset: string;
  /** Next offset the group reads, decimal text; null when it has committed nothing there. */
  readonly committedOffset: string | null;
  /**
   * Only where nothing is committed and the subscription's definition keeps a start position for
   * the partition (a kind added by PATCH, before a member committed it): that offset, decimal
   * text. Its members start there, so the lag counts from it.
   */
  readonly startOffset?: string;
  /** endOffset − committedOffset (or − startOffset), records; null when neither is known. */
  readonly lag: number | null;
}

export interface SubscriptionLag {
  /** Sum of the known lags, records. */
  readonly total: number;
  readonly partitions: readonly PartitionLag[];
}

/**
 * The lag of `group` on `topics`, sorted by topic then partition. `startAt`: where the group starts
 * on partitions it has no commit on (the live start positions of its definition, stored.ts
 * startPositionsOf); a commit always wins over them, as it does for the members.
 * Errors: the transport's (CEG_INVALID_NAME for a topic that does not exist; CEG_BROKER_UNAVAILABLE retriable).
 */
export async function subscriptionLag(transport: Transport, group: string, topics: readonly string[], startAt: readonly TopicPartitionOffset[] = []): Promise<SubscriptionLag> {
  const partitions: PartitionLag[] = [];
  for (const topic of [...topics].sort()) {
    const [ends, committed] = await Promise.all([transport.endOffsets(topic), transport.committedOffsets(group, topic)]);
    partitions.push(...partitionLags(topic, ends, committed, startAt));
  }
  return { total: partitions.reduce((a, p) => a + (p.lag ?? 0), 0), partitions };
}

/** One topic's rows of a group's lag, sorted by partition: the one rule {@link subscriptionLag} and {@link subscriptionLags} share. */
function partitionLags(topic: string, ends: readonly PartitionOffset[], committed: readonly CommittedOffset[], startAt: readonly TopicPartitionOffset[]): PartitionLag[] {
  return [...ends].sort((a, b) => a.partition - b.partition).map((e) => {
    const c = committed.find((x) => x.partition === e.partition)?.offset ?? null;
    const start = c === null ? startAt.find((p) => p.topic === topic && p.partition === e.partition)?.offset : undefined;
    const from = c ?? start ?? null;
    // A committed offset past the end (a topic recreated) counts as no lag, never as negative.
    const lag = from === null ? null : Number(e.offset > from ? e.offset - from : 0n);
    return { topic, partition: e.partition, endOffset: e.offset.toString(), committedOffset: c === null ? null : c.toString(), ...(start === undefined ? {} : { startOffset: start.toString() }), lag };
  });
}

/** A group whose lag {@link subscriptionLags} reads: what {@link subscriptionLag} takes for one. */
export interface LagTarget {
  readonly group: string;
  /** Topics the group reads; those that do not exist are left out (as `GET /subscriptions/{name}/status` does). */
  readonly topics: readonly string[];
  /** Where the group starts on partitions it has no commit on (see {@link subscriptionLag}). */
  readonly startAt?: readonly TopicPartitionOffset[];
}

/**
 * The lag of many groups in one pass, each exactly as {@link subscriptionLag} computes it (what
 * `GET /subscriptions/{name}/status` answers), for a scrape of hundreds of subscriptions:
 * - the end offsets of each topic are read once, shared by every group reading it (groups of one
 *   catalog kind all read its topic); a topic that does not exist (CEG_INVALID_NAME: a retry or
 *   redrive topic of a subscription that never ran) is left out of every group's lag;
 * - then one committed-offsets read per group for all its existing topics (Kafka OffsetFetch:
 *   `Transport.committedOffsetsOf`; without it, one per topic, those of one group at once);
 * - at most `concurrency` end-offset reads, then `concurrency` groups, in flight at once (the
 *   kafkajs adapter runs its own look-ups one at a time).
 * A group any of whose reads failed (an end-offset read of one of its topics, or its own committed
 * offsets) is left out of the answer, the others are not: one failing group does not hide the rest,
 * and a group is never answered with part of its topics (a `sum by (subscription)` would read low).
 * Once `signal` aborts (the caller's time budget), no read starts and the answer is at once what was
 * complete by then; reads in flight finish in the background (at most `concurrency`) and are dropped.
 * Answers by group, only groups with every read done; never rejects.
 */
export async function subscriptionLags(transport: Pick<Transport, 'endOffsets' | 'committedOffsets' | 'committedOffsetsOf'>, targets: readonly LagTarget[], options: { readonly concurrency: number; readonly signal?: AbortSignal }): Promise<Map<string, SubscriptionLag>> {
  const { concurrency, signal } = options;
  const out = new Map<string, SubscriptionLag>();
  // A function, not a narrowed property: the signal aborts while the reads are awaited.
  const aborted = (): boolean => signal?.aborted === true;
  const work = async (): Promise<void> => {
    const ends = new Map<string, readonly PartitionOffset[]>();
    const missing = new Set<string>();
    await eachLimited([...new Set(targets.flatMap((t) => t.topics))].sort(), concurrency, async (topic) => {
      try {
        ends.set(topic, await transport.endOffsets(topic));
      } catch (err) {
        if (err instanceof GatewayError && err.code === 'CEG_INVALID_NAME') missing.add(topic);
        // Any other failure: the topic is in neither set, so every group reading it is left out.
      }
    }, signal);
    await eachLimited(targets, concurrency, async (t) => {
      const topics = [...new Set(t.topics)].filter((topic) => !missing.has(topic)).sort();
      // An end-offset read that failed (not a missing topic): this group has no complete figure.
      if (topics.some((topic) => !ends.has(topic)) || aborted()) return;
      let committed: ReadonlyMap<string, readonly CommittedOffset[]>;
      try {
        committed = topics.length === 0 ? new Map() : transport.committedOffsetsOf !== undefined
          ? await transport.committedOffsetsOf(t.group, topics)
          : new Map(await Promise.all(topics.map(async (topic) => [topic, await transport.committedOffsets(t.group, topic)] as const)));
      } catch {
        return; // this group only; a topic deleted since its end offsets were read is a failure too
      }
      const partitions = topics.flatMap((topic) => partitionLags(topic, ends.get(topic)!, committed.get(topic) ?? [], t.startAt ?? []));
      if (!aborted()) out.set(t.group, { total: partitions.reduce((a, p) => a + (p.lag ?? 0), 0), partitions });
    }, signal);
  };
  if (signal === undefined) {
    await work();
    return out;
  }
  if (signal.aborted) return out;
  // Answer at the budget's end without waiting for reads in flight: a slow broker must not hold the scrape.
  let onAbort: (() => void) | undefined;
  const budgetOver = new Promise<void>((resolve) => signal.addEventListener('abort', (onAbort = () => resolve()), { once: true }));
  try {
    await Promise.race([work(), budgetOver]);
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  }
  return new Map(out);
}
