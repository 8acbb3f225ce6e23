/**
 * Kafka's OFFSET_OUT_OF_RANGE, the same rule on both Kafka adapters: a group's position (its
 * committed offset, or where a running member fetches) that is no longer inside its partition's
 * log — records deleted before they were read, or a topic deleted and created again — goes on
 * from the log start, with a warning naming the group, topic, partition and the offsets lost.
 */

/**
 * Where a partition whose fetch offset is out of range goes on, and how many offsets were lost.
 * Always the log start — Kafka's `auto.offset.reset=earliest`, the least-loss choice for a durable
 * subscription (docs/subscriptions.md "When records vanish under a subscription"):
 * - `offset` below `logStart` (retention or `kafka-delete-records` removed records not read yet):
 *   `lost` = logStart − offset, the records deleted before they were read;
 * - `offset` past `end` (the topic deleted and created again, so offsets start over): `lost` is
 *   undefined — what the old topic held past the position is unknowable; the new topic is read
 *   from its first record, none of it skipped.
 * `undefined` when `offset` is in range after all (the log moved meanwhile): fetch it again.
 * Units: offsets. Spec: Kafka consumer `auto.offset.reset` (Java ConsumerConfig); Kafka protocol
 * Fetch error OFFSET_OUT_OF_RANGE (1).
 */
export function outOfRangeReset(offset: bigint, logStart: bigint, end: bigint): { readonly to: bigint; readonly lost: bigint | undefined; readonly why: 'below-log-start' | 'past-end' } | undefined {
  if (offset < logStart) return { to: logStart, lost: logStart - offset, why: 'below-log-start' };
  if (offset > end) return { to: logStart, lost: undefined, why: 'past-end' };
  return undefined;
}

/**
 * Where a partition of a topic found deleted and then there again goes on: its log start, as
 * {@link outOfRangeReset}'s `past-end` (the new topic's offsets start over, so a position of the
 * old one means nothing, even one that happens to fall inside the new log; nothing of the new
 * topic is skipped). Used when the transport saw the topic missing in between
 * (src/transport/platformatic/fetcher.ts). Pure.
 */
export function recreatedTopicReset(logStart: bigint): { readonly to: bigint; readonly lost: undefined; readonly why: 'past-end' } {
  return { to: logStart, lost: undefined, why: 'past-end' };
}

/**
 * The warning a group's reset logs (both Kafka adapters): what happened to the records between the
 * position and the log start, by `why` of {@link outOfRangeReset}; `position-unknown`: a kafkajs
 * member that had taken nothing of the partition yet does not know the position it fetched from
 * (kafkajs's own reset overwrote the group's commit), so neither which side it was on.
 */
export function outOfRangeWarning(why: OutOfRangeReason): string {
  switch (why) {
    case 'below-log-start': return 'offset out of range: records were deleted before this group read them (retention or delete-records); going on from the log start';
    case 'past-end': return 'offset out of range: the position is past the end of the partition (the topic was deleted and created again?); going on from the log start';
    case 'position-unknown': return 'offset out of range: the position is outside the partition\'s log (records deleted, or the topic created again); going on from the log start';
  }
}

/** Why a group's position was reset: {@link outOfRangeReset}'s `why`, or `position-unknown` (see {@link outOfRangeWarning}). */
export type OutOfRangeReason = 'below-log-start' | 'past-end' | 'position-unknown';

/**
 * The out-of-range resets of a transport's groups (push and library subscriptions, and pull
 * subscriptions through their transport), counted by group and reason since the transport was
 * made: `ce_gateway_offset_resets_total` (docs/observability.md). One count per reset warning.
 */
export class OffsetResetCounts {
  readonly #counts = new Map<string, Map<OutOfRangeReason, number>>();

  /** One reset of `group`'s position for `why`. */
  note(group: string, why: OutOfRangeReason): void {
    let byWhy = this.#counts.get(group);
    if (byWhy === undefined) this.#counts.set(group, (byWhy = new Map<OutOfRangeReason, number>()));
    byWhy.set(why, (byWhy.get(why) ?? 0) + 1);
  }

  /** The counts now, by group then reason (a copy). */
  snapshot(): ReadonlyMap<string, ReadonlyMap<OutOfRangeReason, number>> {
    return new Map([...this.#counts].map(([group, byWhy]) => [group, new Map(byWhy)]));
  }
}
