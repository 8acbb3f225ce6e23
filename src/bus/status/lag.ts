/**
 * Lag of a consumer group, exact from Kafka: per partition of each topic, the end offset (the next
 * offset to be written) minus the group's committed offset (the next it will read). Works whether
 * or not the group has members, on any instance.
 * Spec: issue 10 ("lag per partition"); Kafka ListOffsets and OffsetFetch (what
 *   `kafka-consumer-groups --describe` shows as LAG).
 */
import type { Transport } from '../../transport/port.js';

export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  /** Next offset to be written, decimal text. */
  readonly endOffset: string;
  /** Next offset the group reads, decimal text; null when it has committed nothing there. */
  readonly committedOffset: string | null;
  /** endOffset − committedOffset, records; null when nothing is committed. */
  readonly lag: number | null;
}

export interface SubscriptionLag {
  /** Sum of the known lags, records. */
  readonly total: number;
  readonly partitions: readonly PartitionLag[];
}

/**
 * The lag of `group` on `topics`, sorted by topic then partition.
 * Errors: the transport's (CEG_INVALID_NAME for a topic that does not exist; CEG_BROKER_UNAVAILABLE retriable).
 */
export async function subscriptionLag(transport: Transport, group: string, topics: readonly string[]): Promise<SubscriptionLag> {
  const partitions: PartitionLag[] = [];
  for (const topic of [...topics].sort()) {
    const [ends, committed] = await Promise.all([transport.endOffsets(topic), transport.committedOffsets(group, topic)]);
    for (const e of [...ends].sort((a, b) => a.partition - b.partition)) {
      const c = committed.find((x) => x.partition === e.partition)?.offset ?? null;
      // A committed offset past the end (a topic recreated) counts as no lag, never as negative.
      const lag = c === null ? null : Number(e.offset > c ? e.offset - c : 0n);
      partitions.push({ topic, partition: e.partition, endOffset: e.offset.toString(), committedOffset: c === null ? null : c.toString(), lag });
    }
  }
  return { total: partitions.reduce((a, p) => a + (p.lag ?? 0), 0), partitions };
}
