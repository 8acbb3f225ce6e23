/**
 * `start` of a new subscription, resolved when it is created: the group's offsets are committed
 * before the creation is answered, so the group never depends on what "latest" means at the moment
 * its first member happens to join. `latest` commits the end offsets of now (every event accepted
 * after the `201` is delivered), `earliest` the start of the log, a time the first offset at or after
 * it (Kafka's offsets-for-times; the record timestamp is when the gateway wrote the record). The
 * subscription's own retry topic starts at its beginning, its redrive topic at its end.
 * Kafka refuses to move the offsets of a group with members; a group of a deleted subscription of
 * the same name may still have some for a moment, so this waits for them to leave (bounded).
 * A topic added later (a kind added by PATCH) is resolved the same way when the PATCH is taken, on
 * its partitions without a commit: committed for a pull subscription (no members), handed to the
 * members of a push one through its definition (`startAt`), as its group has live members then.
 * Spec: issue 8 ("resolved when the subscription is created"); DESIGN "Delivery" (T5).
 */
import { GatewayError, isGatewayError } from '../../core/errors.js';
import { sleep } from '../../core/retry.js';
import type { OffsetQuery, TopicPartitionOffset, Transport } from '../../transport/port.js';
import { parseRfc3339Time } from '../../core/rfc3339.js';

/** The offset target of a `start` value (`latest`, `earliest` or an RFC 3339 time). */
export function startTarget(start: string): OffsetQuery {
  if (start === 'latest') return { kind: 'latest' };
  if (start === 'earliest') return { kind: 'earliest' };
  const t = parseRfc3339Time(start);
  if (!t.ok) throw new GatewayError('CEG_INVALID_OPTIONS', `start: latest, earliest or an RFC 3339 time: ${t.reason}`, { retriable: false, details: { field: 'start' } });
  return { kind: 'timestamp', timestampMs: t.epochMs };
}

/**
 * Commits the group's start offsets on `topics`, and on each of the subscription's own topics
 * (`own`: its retry topic from the beginning; its redrive topic from the end, so a subscription
 * created again under an old name never gets the old one's redriven events).
 * Errors: CEG_INVALID_OPTIONS (retriable) when the group still has members after `waitMs`; the transport's.
 */
export async function commitStart(transport: Transport, group: string, topics: readonly string[], start: string, own: readonly (readonly [topic: string, at: 'earliest' | 'latest'])[] = [], waitMs = 15_000): Promise<void> {
  const target = startTarget(start);
  await whileBusy(waitMs, async () => {
    for (const topic of topics) await transport.resetOffsets(group, topic, target);
    for (const [topic, at] of own) await transport.resetOffsets(group, topic, { kind: at });
  });
}

/**
 * `start` of topics added to an existing subscription (a kind added by PATCH), resolved now as it
 * is at create: the offsets `start` points at (`latest`: the end offsets of now, so every event
 * accepted after the PATCH's answer is delivered), for each partition of `topics` where `group` has
 * no committed offset. A partition with a commit (a kind removed and added again) is left out: its
 * commit is never moved, back or forth. Nothing changes; the caller commits the positions (a group
 * without members) or hands them to the members it starts (`GroupSpec.startAt`: Kafka refuses
 * member-less commits while the group has members).
 * Shape: one entry per partition without a commit, by topic in `topics` order, then by partition;
 * offsets are record offsets (the next record to read).
 * Errors: CEG_INVALID_OPTIONS (a `start` that is not an RFC 3339 time); the transport's
 *   (CEG_INVALID_NAME for an unknown topic, CEG_BROKER_UNAVAILABLE retriable).
 */
export async function resolveStart(transport: Transport, group: string, topics: readonly string[], start = 'latest'): Promise<TopicPartitionOffset[]> {
  const target = startTarget(start);
  const out: TopicPartitionOffset[] = [];
  for (const topic of topics) {
    const open = new Set((await transport.committedOffsets(group, topic)).filter((c) => c.offset === null).map((c) => c.partition));
    if (open.size === 0) continue;
    for (const p of await transport.offsetsAt(topic, target)) if (open.has(p.partition)) out.push({ topic, partition: p.partition, offset: p.offset });
  }
  return out;
}

/**
 * Commits `positions` (from {@link resolveStart}) for `group`, which must have no members (a pull
 * subscription's group); waits up to `waitMs` (ms) while it has some, as {@link commitStart} does.
 * Errors: CEG_INVALID_OPTIONS (retriable) when the group still has members after `waitMs`; the transport's.
 */
export async function commitPositions(transport: Transport, group: string, positions: readonly TopicPartitionOffset[], waitMs = 15_000): Promise<void> {
  const topics = [...new Set(positions.map((p) => p.topic))];
  await whileBusy(waitMs, async () => {
    for (const topic of topics) await transport.commitOffsets(group, topic, positions.filter((p) => p.topic === topic).map((p) => ({ partition: p.partition, offset: p.offset })));
  });
}

/** Runs `commit` again (backoff ≤ 2 s) while the group has members, up to `waitMs` (ms). */
async function whileBusy(waitMs: number, commit: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await commit();
      return;
    } catch (err) {
      // groupBusy: the members of an earlier subscription of this name are still leaving.
      const busy = isGatewayError(err, 'CEG_INVALID_OPTIONS') && err.retriable;
      if (!busy || Date.now() > deadline) throw err;
      await sleep(Math.min(2000, 100 * attempt));
    }
  }
}
