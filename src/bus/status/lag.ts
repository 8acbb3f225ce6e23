/**
 * Lag of a consumer group, exact from Kafka: per partition of each topic, the end offset (the next
 * offset to be written) minus the group's committed offset (the next it will read). Works whether
 * or not the group has members, on any instance.
 * Spec: issue 10 ("lag per partition"); Kafka ListOffsets and OffsetFetch (what
 *   `kafka-consumer-groups --describe` shows as LAG).
 */
import type { CommittedOffset, PartitionOffset, TopicPartitionOffset, Transport } from '../../transport/port.js';
import { topicMissing } from '../../transport/topics.js';
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
 * Errors: the transport's (CEG_INVALID_NAME with `details.topicMissing` for a topic that does not
 *   exist: {@link existingTopicsLag} leaves such a topic out instead; CEG_BROKER_UNAVAILABLE retriable).
 */
export async function subscriptionLag(transport: Transport, group: string, topics: readonly string[], startAt: readonly TopicPartitionOffset[] = []): Promise<SubscriptionLag> {
  const partitions: PartitionLag[] = [];
  for (const topic of [...topics].sort()) {
    const [ends, committed] = await Promise.all([transport.endOffsets(topic), transport.committedOffsets(group, topic)]);
    partitions.push(...partitionLags(topic, ends, committed, startAt));
  }
  return { total: partitions.reduce((a, p) => a + (p.lag ?? 0), 0), partitions };
}

/**
 * The lag of `group` on those of `topics` that exist, as {@link subscriptionLag} computes it: a topic
 * the transport says is missing (`topicMissing`: Kafka UNKNOWN_TOPIC_OR_PARTITION on both clients,
 * the memory transport's unknown topic) is left out — a retry or redrive topic of a subscription
 * that never ran, or a topic deleted since (even one whose partition count the transport still
 * has cached: its offsets' read then finds it gone). What `GET /subscriptions/{name}/status` answers.
 * Errors: every other failure of the transport, as it came (a name the charset rule refuses is
 *   CEG_INVALID_NAME without `topicMissing`; CEG_BROKER_UNAVAILABLE retriable).
 */
export async function existingTopicsLag(transport: Pick<Transport, 'endOffsets' | 'committedOffsets'>, group: string, topics: readonly string[], startAt: readonly TopicPartitionOffset[] = []): Promise<SubscriptionLag> {
  const partitions: PartitionLag[] = [];
  for (const topic of [...new Set(topics)].sort()) {
    let read: readonly [readonly PartitionOffset[], readonly CommittedOffset[]];
    try {
      read = await Promise.all([transport.endOffsets(topic), transport.committedOffsets(group, topic)]);
    } catch (err) {
      if (topicMissing(err)) continue;
      throw err;
    }
    partitions.push(...partitionLags(topic, read[0], read[1], startAt));
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
 * - group by group in the order of `targets` (at most `concurrency` groups at once), so a budget
 *   that runs out answers the first groups whole rather than none: the end offsets of a group's
 *   topics, then one committed-offsets read for all of them (Kafka OffsetFetch:
 *   `Transport.committedOffsetsOf`; without it, one per topic, those of one group at once);
 * - the end offsets of each topic are read once, shared by every group reading it (groups of one
 *   catalog kind all read its topic); a topic that does not exist (the transport's `topicMissing`: a
 *   retry or redrive topic of a subscription that never ran) is left out of every group's lag.
 * A group any of whose reads failed (an end-offset read of one of its topics, or its own committed
 * offsets) is left out of the answer, the others are not: one failing group does not hide the rest,
 * and a group is never answered with part of its topics (a `sum by (subscription)` would read low).
 * Once `signal` aborts (the caller's time budget), no read starts and the answer is at once what was
 * complete by then; reads in flight finish in the background and are dropped. A caller that
 * scrapes again puts the groups left out first ({@link missedFirst}), so none misses every scrape.
 * Answers by group, only groups with every read done; never rejects.
 */
export async function subscriptionLags(transport: Pick<Transport, 'endOffsets' | 'committedOffsets' | 'committedOffsetsOf'>, targets: readonly LagTarget[], options: { readonly concurrency: number; readonly signal?: AbortSignal }): Promise<Map<string, SubscriptionLag>> {
  const { concurrency, signal } = options;
  const out = new Map<string, SubscriptionLag>();
  // A function, not a narrowed property: the signal aborts while the reads are awaited.
  const aborted = (): boolean => signal?.aborted === true;
  // One read per topic, whichever group asks first; never rejects.
  const ends = new Map<string, Promise<readonly PartitionOffset[] | 'missing' | 'failed'>>();
  const endsOf = (topic: string): Promise<readonly PartitionOffset[] | 'missing' | 'failed'> => {
    let read = ends.get(topic);
    if (read === undefined) {
      read = transport.endOffsets(topic).then(
        (offsets) => offsets,
        // Any other failure: every group reading the topic is left out.
        (err: unknown) => (topicMissing(err) ? 'missing' as const : 'failed' as const),
      );
      ends.set(topic, read);
    }
    return read;
  };
  const work = (): Promise<void> =>
    eachLimited(targets, concurrency, async (t) => {
      if (aborted()) return;
      const named = [...new Set(t.topics)].sort();
      const read = await Promise.all(named.map(endsOf));
      // An end-offset read that failed (not a missing topic): this group has no complete figure.
      if (read.includes('failed') || aborted()) return;
      const existing = named.flatMap((topic, i) => {
        const offsets = read[i]!;
        return offsets === 'missing' || offsets === 'failed' ? [] : [{ topic, offsets }];
      });
      const topics = existing.map((e) => e.topic);
      let committed: ReadonlyMap<string, readonly CommittedOffset[]>;
      try {
        committed = topics.length === 0 ? new Map() : transport.committedOffsetsOf !== undefined
          ? await transport.committedOffsetsOf(t.group, topics)
          : new Map(await Promise.all(topics.map(async (topic) => [topic, await transport.committedOffsets(t.group, topic)] as const)));
      } catch {
        return; // this group only; a topic deleted since its end offsets were read is a failure too
      }
      const partitions = existing.flatMap((e) => partitionLags(e.topic, e.offsets, committed.get(e.topic) ?? [], t.startAt ?? []));
      if (!aborted()) out.set(t.group, { total: partitions.reduce((a, p) => a + (p.lag ?? 0), 0), partitions });
    }, signal);
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

/**
 * `targets` with the groups `missed` (left out of the previous answer: its budget ran out first,
 * or a read failed) moved to the front, each part in its given order. A scrape that cannot read
 * every group within its budget then reads the ones it missed first next time, so every group has
 * a figure within a few scrapes instead of the same groups at the end of the list never having one.
 * Pure.
 */
export function missedFirst(targets: readonly LagTarget[], missed: ReadonlySet<string>): LagTarget[] {
  if (missed.size === 0) return [...targets];
  return [...targets.filter((t) => missed.has(t.group)), ...targets.filter((t) => !missed.has(t.group))];
}
