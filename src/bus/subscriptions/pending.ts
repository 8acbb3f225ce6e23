/**
 * How much work a consumer group has on one topic, from offsets alone (no record is read): the
 * records between the group's committed offset and the end offset of each partition.
 * Spec: issue 10 ("Hundreds of subscriptions": members started only where a group has lag);
 * Kafka's consumer lag = end offset − committed offset.
 */
import type { CommittedOffset, PartitionOffset, StartFrom } from '../../transport/port.js';

/**
 * The work of a group on one topic.
 * - `records`: records not yet committed by the group, summed over the partitions (0 = caught up).
 * - `unpinned`: a partition has no committed offset and the group starts at `latest`: a member must
 *   join once to fix where it starts (the transport commits that position on join), otherwise
 *   records written while no member runs would be skipped when one finally joins.
 * - `positions`: per partition, where the group would resume (its commit, or the log start when it
 *   has none and starts at `earliest`, or when the commit lies before the log start: expired records),
 *   never past the partition's end.
 */
export interface Pending {
  readonly records: bigint;
  readonly unpinned: boolean;
  readonly positions: ReadonlyMap<number, bigint>;
}

/**
 * Pending work per partition: `end − max(committed, logStart)`, never negative.
 * Shapes: `committed`, `ends` and `starts` list partitions by number (any order); a partition
 * missing from `ends` counts as empty. Units: offsets (records).
 */
export function pendingOf(committed: readonly CommittedOffset[], ends: readonly PartitionOffset[], starts: readonly PartitionOffset[], startFrom: StartFrom): Pending {
  const endOf = new Map(ends.map((e) => [e.partition, e.offset]));
  const startOf = new Map(starts.map((s) => [s.partition, s.offset]));
  let records = 0n;
  let unpinned = false;
  const positions = new Map<number, bigint>();
  for (const c of committed) {
    const end = endOf.get(c.partition) ?? 0n;
    const logStart = startOf.get(c.partition) ?? 0n;
    if (c.offset === null && startFrom === 'latest') {
      unpinned = true;
      continue;
    }
    const from = c.offset === null || c.offset < logStart ? logStart : c.offset;
    // A commit past the end (a truncated log) is remembered as the end: any new record is looked at again.
    positions.set(c.partition, from > end ? end : from);
    if (end > from) records += end - from;
  }
  return { records, unpinned, positions };
}

/** True when some partition's end offset lies past the position known for it (or none is known). */
export function movedPast(known: ReadonlyMap<number, bigint> | undefined, ends: readonly PartitionOffset[]): boolean {
  if (known === undefined) return true;
  return ends.some((e) => {
    const k = known.get(e.partition);
    return k === undefined || e.offset > k;
  });
}
