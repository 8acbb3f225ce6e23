/**
 * A subscription's lag (issue 15 `ce_gateway_subscription_lag`): per topic partition, the records
 * between its consumer group's committed offset and the partition's end offset, read from the
 * broker when asked (scrape time, a status request), never on the delivery path.
 * A partition the group has committed nothing on yet has no lag figure (Kafka's own tools show
 * "-" there too): it is left out rather than guessed.
 */
import type { Transport } from '../../transport/port.js';

/** One partition's lag; `lag` in records (≥ 0). */
export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  readonly lag: number;
}

/**
 * The lag of `group` on each of `topics`, sorted by topic then partition.
 * Errors: the transport's (CEG_BROKER_UNAVAILABLE, retriable; CEG_INVALID_NAME for a missing topic).
 */
export async function subscriptionLag(transport: Pick<Transport, 'endOffsets' | 'committedOffsets'>, group: string, topics: readonly string[]): Promise<PartitionLag[]> {
  const out: PartitionLag[] = [];
  for (const topic of [...topics].sort()) {
    const [ends, committed] = await Promise.all([transport.endOffsets(topic), transport.committedOffsets(group, topic)]);
    const at = new Map(committed.map((c) => [c.partition, c.offset]));
    for (const e of [...ends].sort((a, b) => a.partition - b.partition)) {
      const c = at.get(e.partition);
      if (c === undefined || c === null) continue;
      const lag = e.offset - c;
      out.push({ topic, partition: e.partition, lag: lag > 0n ? Number(lag) : 0 });
    }
  }
  return out;
}
