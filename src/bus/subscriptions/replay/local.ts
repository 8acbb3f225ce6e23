/**
 * The replay of a subscription this process runs itself (a library subscription, a connector):
 * stop its members here, move the offsets once the group has no member, start the members again.
 * Members of the same group in other processes are not stopped from here: the reset waits for
 * them to leave (`waitMs`) and fails with CEG_REPLAY_FAILED (retriable) when they stay.
 * Spec: issue 9 ("Library subscriptions and connectors replay the same way (`bus.replay(subscription, to)`)").
 */
import { GatewayError } from '../../../core/errors.js';
import type { StartFrom, Transport } from '../../../transport/port.js';
import type { ReplayAuditEntry } from './audit.js';
import { planOf, positionsOf, resolveTarget } from './plan.js';
import type { ReplayOffsets } from './plan.js';
import { commitWhenIdle } from './reset.js';
import type { RestartableSubscription } from './restartable.js';
import { parseTarget, verbatimTo } from './target.js';
import type { ReplayTo } from './target.js';

/** What a replay answers: the same shape as an entry of `GET /subscriptions/{name}/replays`. */
export type ReplayReport = ReplayAuditEntry;

export interface LocalReplayOptions {
  /** Only report what would move (nothing changes). Default false. */
  readonly dryRun?: boolean;
  /** Longest wait for the group to have no member, ms. Default 30 000. */
  readonly waitMs?: number;
  /** Where members start on a partition without a committed offset (for `from`). Default `latest`. */
  readonly startFrom?: StartFrom;
  /** Who asked, for the report. Default `library`. */
  readonly by?: string;
}

/**
 * Replays `members` (this process's members of one subscription) to `to`.
 * Errors: CEG_NOT_FOUND (no member given); CEG_INVALID_REPLAY naming the field; CEG_REPLAY_FAILED
 *   (retriable); the transport's.
 */
export async function replayLocal(transport: Transport, members: readonly RestartableSubscription[], topics: readonly string[], to: ReplayTo, opts: LocalReplayOptions = {}): Promise<ReplayReport> {
  const first = members[0];
  if (first === undefined) throw new GatewayError('CEG_NOT_FOUND', 'no running subscription of that name in this process: subscribe first (the replay needs its kinds)', { retriable: false, details: { field: 'subscription' } });
  const group = first.name;
  const targets = await resolveTarget(transport, topics, parseTarget(to, topics));
  let from: ReplayOffsets;
  if (opts.dryRun === true) {
    from = await positionsOf(transport, group, targets, opts.startFrom ?? 'latest');
  } else {
    await Promise.all(members.map((m) => m.halt()));
    try {
      from = await commitWhenIdle(transport, group, targets, opts.startFrom ?? 'latest', opts.waitMs ?? 30_000);
    } finally {
      await Promise.allSettled(members.map((m) => m.resume()));
    }
  }
  return { at: new Date().toISOString(), by: opts.by ?? 'library', to: verbatimTo(to), dryRun: opts.dryRun === true, outcome: 'done', ...planOf(topics, from, targets) };
}
