/**
 * The plan of a replay: for every partition it moves, the subscription's position before (`from`,
 * its committed offset), after (`to`) and how many records it will be handed again (`events`).
 * The dry run and the real replay both build it, so they report the same numbers when nothing was
 * written or consumed in between.
 *
 * - `to` is resolved once, when the request is taken: `latest` is the end offset of that moment
 *   (records written after it are delivered normally), a time is the first record whose timestamp
 *   is at or after it (Kafka offsets-for-times; the record timestamp is when the gateway wrote the
 *   record), explicit offsets must lie within the partition's log (start ≤ offset ≤ end).
 * - `from` is the group's committed offset; a partition where the group committed nothing counts
 *   from where its members would start: its start position kept by the definition (`startAt`, a
 *   kind added by PATCH) when it has one, else `startFrom` (the end offset for `latest`, the log
 *   start for `earliest`).
 * - Moving back, `events` = from − to (records handed out again) and `skipped` = 0; moving forward,
 *   `events` = 0 and `skipped` = to − from (records the subscription will never see). The totals
 *   are the sums. Counts are records (offsets): a record of another kind on the same topic or one
 *   the subscription's filters drop is counted but not delivered.
 * Spec: issue 9 ("reports per partition the offsets from and to and how many events will be
 *   delivered again, and their total as `events`").
 */
import type { PartitionOffset, StartFrom, TopicPartitionOffset, Transport } from '../../../transport/port.js';
import { invalidReplay, parsePartitionKey, partitionKey } from './target.js';
import type { ReplayTarget } from './target.js';

/** One partition of a replay's report. Offsets are decimal strings (64-bit), counts numbers. */
export interface PartitionReport {
  readonly from: string;
  readonly to: string;
  /** Records the subscription is handed again (moving back), else 0. */
  readonly events: number;
  /** Records moved past without delivery (moving forward), else 0. */
  readonly skipped: number;
}

export interface ReplayPlan {
  /** By partition key (`"<p>"`, or `"<topic>/<p>"` for a subscription of several topics). */
  readonly partitions: Readonly<Record<string, PartitionReport>>;
  readonly events: number;
  readonly skipped: number;
}

/** The offsets a replay commits, per topic. */
export type ReplayOffsets = ReadonlyMap<string, readonly PartitionOffset[]>;

const toCount = (n: bigint): number => (n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n));

/**
 * Resolves a target to offsets per topic. Errors: CEG_INVALID_REPLAY naming `to.<key>` (no such
 * partition, an offset outside the log); the transport's (CEG_BROKER_UNAVAILABLE, retriable).
 */
export async function resolveTarget(transport: Transport, topics: readonly string[], target: ReplayTarget): Promise<ReplayOffsets> {
  const out = new Map<string, PartitionOffset[]>();
  if (target.kind !== 'offsets') {
    const query = target.kind === 'timestamp' ? { kind: 'timestamp' as const, timestampMs: target.timestampMs } : { kind: target.kind };
    for (const topic of topics) out.set(topic, [...(await transport.offsetsAt(topic, query))]);
    return out;
  }
  const bounds = new Map<string, { low: readonly PartitionOffset[]; high: readonly PartitionOffset[] }>();
  for (const [key, offset] of target.offsets) {
    const where = parsePartitionKey(key, topics)!; // parseTarget checked the form
    let b = bounds.get(where.topic);
    if (b === undefined) {
      b = { low: await transport.offsetsAt(where.topic, { kind: 'earliest' }), high: await transport.offsetsAt(where.topic, { kind: 'latest' }) };
      bounds.set(where.topic, b);
    }
    const low = b.low.find((o) => o.partition === where.partition)?.offset;
    const high = b.high.find((o) => o.partition === where.partition)?.offset;
    if (low === undefined || high === undefined) throw invalidReplay(`to.${key}`, `${where.topic} has ${b.high.length} partitions (0–${b.high.length - 1})`);
    if (offset < low || offset > high) throw invalidReplay(`to.${key}`, `offset ${offset} is outside the partition's log (${low}–${high})`);
    const list = out.get(where.topic) ?? [];
    list.push({ partition: where.partition, offset });
    out.set(where.topic, list);
  }
  for (const list of out.values()) list.sort((a, b) => a.partition - b.partition);
  return out;
}

/**
 * The group's position on every partition a replay moves: committed offsets, or where a member
 * would start when the group has none. Errors: the transport's.
 */
export async function positionsOf(transport: Transport, group: string, targets: ReplayOffsets, startFrom: StartFrom, startAt: readonly TopicPartitionOffset[] = []): Promise<ReplayOffsets> {
  const out = new Map<string, PartitionOffset[]>();
  for (const [topic, moves] of targets) {
    const committed = await transport.committedOffsets(group, topic);
    const pinned = new Map(startAt.filter((p) => p.topic === topic).map((p) => [p.partition, p.offset]));
    const fallback = committed.some((c) => c.offset === null && !pinned.has(c.partition)) ? await transport.offsetsAt(topic, { kind: startFrom }) : [];
    out.set(
      topic,
      moves.map((m) => ({ partition: m.partition, offset: committed.find((c) => c.partition === m.partition)?.offset ?? pinned.get(m.partition) ?? fallback.find((f) => f.partition === m.partition)?.offset ?? 0n })),
    );
  }
  return out;
}

/** The report of moving from `from` to `targets` (pure). */
export function planOf(topics: readonly string[], from: ReplayOffsets, targets: ReplayOffsets): ReplayPlan {
  const partitions: Record<string, PartitionReport> = {};
  let events = 0n;
  let skipped = 0n;
  for (const [topic, moves] of targets) {
    for (const m of moves) {
      const f = from.get(topic)?.find((o) => o.partition === m.partition)?.offset ?? m.offset;
      const back = f > m.offset ? f - m.offset : 0n;
      const forward = m.offset > f ? m.offset - f : 0n;
      events += back;
      skipped += forward;
      partitions[partitionKey(topic, m.partition, topics)] = { from: f.toString(), to: m.offset.toString(), events: toCount(back), skipped: toCount(forward) };
    }
  }
  return { partitions, events: toCount(events), skipped: toCount(skipped) };
}

/** A partition a replay meant to move and did not (or not for sure): its target offset (decimal string). */
export interface NotMovedReport {
  readonly to: string;
}

/**
 * The report of a replay that stopped part-way (pure): `partitions` and the totals count the
 * topics in `moved` (their commit went through), from `from` (the positions before the replay);
 * `notMoved` names the planned partitions of every other topic with their target. With no topic
 * moved, `partitions` is empty and `notMoved` is the whole plan.
 */
export function partialPlanOf(topics: readonly string[], from: ReplayOffsets | undefined, targets: ReplayOffsets, moved: readonly string[]): ReplayPlan & { readonly notMoved: Readonly<Record<string, NotMovedReport>> } {
  const done = new Map([...targets].filter(([topic]) => moved.includes(topic)));
  const notMoved: Record<string, NotMovedReport> = {};
  for (const [topic, offsets] of targets) {
    if (moved.includes(topic)) continue;
    for (const o of offsets) notMoved[partitionKey(topic, o.partition, topics)] = { to: o.offset.toString() };
  }
  return { ...planOf(topics, from ?? new Map(), done), notMoved };
}
