/**
 * Lag of a consumer group, exact from Kafka: per partition of each topic, the end offset (the next
 * offset to be written) minus the group's committed offset (the next it will read). Works whether
 * or not the group has members, on any instance.
 * Spec: issue 10 ("lag per partition"); Kafka ListOffsets and OffsetFetch (what
 *   `kafka-consumer-groups --describe` shows as LAG).
 */
import type { TopicPartitionOffset, Transport } from '../../transport/port.js';

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
    for (const e of [...ends].sort((a, b) => a.partition - b.partition)) {
      const c = committed.find((x) => x.partition === e.partition)?.offset ?? null;
      const start = c === null ? startAt.find((p) => p.topic === topic && p.partition === e.partition)?.offset : undefined;
      const from = c ?? start ?? null;
      // A committed offset past the end (a topic recreated) counts as no lag, never as negative.
      const lag = from === null ? null : Number(e.offset > from ? e.offset - from : 0n);
      partitions.push({ topic, partition: e.partition, endOffset: e.offset.toString(), committedOffset: c === null ? null : c.toString(), ...(start === undefined ? {} : { startOffset: start.toString() }), lag });
    }
  }
  return { total: partitions.reduce((a, p) => a + (p.lag ?? 0), 0), partitions };
}
