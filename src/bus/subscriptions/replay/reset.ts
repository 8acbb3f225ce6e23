/**
 * Commits a replay's offsets once the group has no member left. Kafka refuses to move the
 * committed offsets of a group with members (the transport says so with a retriable
 * CEG_INVALID_OPTIONS), so this asks again until the members are gone — they leave because every
 * instance saw the replay's pause (HTTP subscriptions) or because this process stopped them (the
 * library) — or the wait runs out.
 *
 * The group is probed first by committing its own committed offsets again (no change), and only
 * then are the positions read that the report calls `from`: members commit what they handled when
 * they leave, so positions read while one is still there could be behind.
 * Spec: issue 9 ("Kafka refuses to reset the committed offsets of a group that has members").
 */
import { GatewayError, isGatewayError } from '../../../core/errors.js';
import { sleep } from '../../../core/retry.js';
import type { StartFrom, TopicPartitionOffset, Transport } from '../../../transport/port.js';
import { positionsOf } from './plan.js';
import type { ReplayOffsets } from './plan.js';

const busy = (err: unknown): boolean => isGatewayError(err, 'CEG_INVALID_OPTIONS') && err.retriable;

/**
 * What {@link commitWhenIdle} has done so far, filled in as it goes: read it after a failure to
 * tell what moved (the audit entry of a replay that failed part-way, coordinator.ts).
 */
export interface CommitProgress {
  /** The positions before the replay (`from`), once read (before the first commit of a target). */
  from?: ReplayOffsets;
  /** The topics whose commit of the targets went through, in commit order. */
  readonly committed: string[];
}

/**
 * `err` when nothing moved yet, or when it is not a GatewayError; else the same error (code,
 * retriability) saying which topics had moved already (`details.moved`): the caller's answer must
 * not read as "nothing happened" when some offsets moved.
 */
function movedPartly(err: unknown, progress: CommitProgress): unknown {
  if (progress.committed.length === 0 || !(err instanceof GatewayError)) return err;
  const moved = progress.committed.join(', ');
  return new GatewayError(err.code, `${err.message}; the offsets of ${moved} had moved already, the other topics' did not: replay again to the same target to finish`, { retriable: err.retriable, cause: err, details: { ...err.details, moved: [...progress.committed] } });
}

/**
 * Waits (at most `waitMs`, ms) until `group` has no member, reads its positions, commits `targets`.
 * `proceed`, asked right before the commit and after each try that found members, may refuse it
 * by throwing (a later replay took over, the subscription was deleted, the lease ran out). Resolves with the positions before the commit (`from`; where the group has no
 * commit, its `startAt` position when given, else `startFrom`: plan.ts positionsOf). `progress`,
 * when given, is filled in as the commits go through (what moved when it then fails: a topic's
 * commit that threw is not in it — a commit a broker failed mid-request may still have moved some
 * of that topic's partitions).
 * Errors: CEG_REPLAY_FAILED (retriable) when members are still there after `waitMs`, or `signal`
 *   aborted; what `proceed` throws; the transport's — once some topics moved, each of these says
 *   which in its message and `details.moved`.
 */
export async function commitWhenIdle(transport: Transport, group: string, targets: ReplayOffsets, startFrom: StartFrom, waitMs: number, signal?: AbortSignal, proceed?: () => void, startAt?: readonly TopicPartitionOffset[], progress: CommitProgress = { committed: [] }): Promise<ReplayOffsets> {
  const deadline = Date.now() + waitMs;
  // The positions read before the first commit of `targets`: once a topic's commit went through, a
  // retry (a member joined before the next topic's commit) would read that topic's new offset as
  // its position before the replay, and report it as not moved.
  let before: ReplayOffsets | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      for (const topic of targets.keys()) {
        const committed = await transport.committedOffsets(group, topic);
        const same = committed.flatMap((c) => (c.offset === null ? [] : [{ partition: c.partition, offset: c.offset }]));
        await transport.commitOffsets(group, topic, same);
      }
      const from = before ?? (await positionsOf(transport, group, targets, startFrom, startAt));
      proceed?.();
      for (const [topic, offsets] of targets) {
        before = from;
        progress.from = from;
        await transport.commitOffsets(group, topic, offsets);
        if (!progress.committed.includes(topic)) progress.committed.push(topic);
      }
      return from;
    } catch (err) {
      if (!busy(err)) throw movedPartly(err, progress);
      // While it waits for the group too: a subscription deleted, or a later replay, ends the wait now.
      try {
        proceed?.();
      } catch (refused) {
        throw movedPartly(refused, progress);
      }
      if (Date.now() >= deadline || signal?.aborted === true) {
        const moved = progress.committed.length === 0 ? 'nothing was moved' : `the offsets of ${progress.committed.join(', ')} moved already, the others did not; replay again to the same target to finish`;
        throw new GatewayError('CEG_REPLAY_FAILED', `the consumer group ${group} still had members after ${waitMs} ms; ${moved}`, { retriable: true, cause: err, details: { group, ...(progress.committed.length === 0 ? {} : { moved: [...progress.committed] }) } });
      }
      await sleep(Math.min(1000, 100 * attempt));
    }
  }
}
