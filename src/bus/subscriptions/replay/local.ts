/**
 * The replay of a subscription this process runs itself (a library subscription, a connector):
 * stop its members here, move the offsets once the group has no member, start the members again.
 * Members of the same group in other processes are not stopped from here: the reset waits for
 * them to leave (`waitMs`) and fails with CEG_REPLAY_FAILED (retriable) when they stay.
 * Spec: issue 9 ("Library subscriptions and connectors replay the same way (`bus.replay(subscription, to)`)").
 */
import { GatewayError } from '../../../core/errors.js';
import type { StartFrom, Transport } from '../../../transport/port.js';
import { failedReplayEntry, failureOf } from './audit.js';
import type { BackgroundAuditWrites, ReplayAnswer, ReplayAuditEntry, ReplayAuditSink } from './audit.js';
import { planOf, positionsOf, resolveTarget } from './plan.js';
import type { ReplayOffsets } from './plan.js';
import { commitWhenIdle } from './reset.js';
import type { CommitProgress } from './reset.js';
import type { RestartableSubscription } from './restartable.js';
import { parseTarget, verbatimTo } from './target.js';
import type { ReplayTo } from './target.js';

/**
 * What a replay answers: the same shape as an entry of `GET /subscriptions/{name}/replays`, with
 * `auditFailure` when a finished replay's entry could not be written (audit.ts ReplayAnswer).
 */
export type ReplayReport = ReplayAnswer;

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
 * Where a replay of this process's members is audited: the replay audit log the HTTP replays go to
 * (`sink`, keyed by the consumer group), and the writes behind a failure's answer (`background`).
 */
export interface LocalReplayAudit {
  readonly sink: ReplayAuditSink;
  readonly background: BackgroundAuditWrites;
}

/**
 * Replays `members` (this process's members of one subscription) to `to`.
 * With `audit`, the replay is written to the replay audit log as an HTTP one is (coordinator.ts,
 * docs/subscriptions.md "What the audit log holds"): a dry run, and a replay that stopped the
 * members whatever its end — `done` before the report is answered (a failure to write it is
 * reported in the report's `auditFailure`, logged and counted, as over HTTP: the offsets moved, and
 * an error would have the caller replay again; a dry run's is the error), `partial` or `failed`
 * with the error behind the error's answer (`audit.background`: logged and counted when it
 * cannot be written). A request refused before anything happened (no member, an invalid
 * `to`, the broker not answering while `to` is resolved) is not an entry.
 * Errors: CEG_NOT_FOUND (no member given); CEG_INVALID_REPLAY naming the field; CEG_REPLAY_FAILED
 *   (retriable); the transport's (also the audit log's, for the `done` entry).
 */
export async function replayLocal(transport: Transport, members: readonly RestartableSubscription[], topics: readonly string[], to: ReplayTo, opts: LocalReplayOptions = {}, audit?: LocalReplayAudit): Promise<ReplayReport> {
  const first = members[0];
  if (first === undefined) throw new GatewayError('CEG_NOT_FOUND', 'no running subscription of that name in this process: subscribe first (the replay needs its kinds)', { retriable: false, details: { field: 'subscription' } });
  const group = first.name;
  const targets = await resolveTarget(transport, topics, parseTarget(to, topics));
  const head = (): Pick<ReplayReport, 'at' | 'by' | 'to' | 'dryRun'> => ({ at: new Date().toISOString(), by: opts.by ?? 'library', to: verbatimTo(to), dryRun: opts.dryRun === true });
  let from: ReplayOffsets;
  if (opts.dryRun === true) {
    from = await positionsOf(transport, group, targets, opts.startFrom ?? 'latest');
  } else {
    await Promise.all(members.map((m) => m.halt()));
    const progress: CommitProgress = { committed: [] };
    try {
      from = await commitWhenIdle(transport, group, targets, opts.startFrom ?? 'latest', opts.waitMs ?? 30_000, undefined, undefined, undefined, progress);
    } catch (err) {
      // The members were stopped for it: an entry, written behind the error's answer (as over HTTP).
      if (audit !== undefined) {
        const entry = failedReplayEntry(head(), topics, targets, progress, err);
        audit.background.start(group, () => audit.sink.append(group, entry), { moved: [...progress.committed] });
      }
      throw err;
    } finally {
      await Promise.allSettled(members.map((m) => m.resume()));
    }
  }
  const report: ReplayAuditEntry = { ...head(), outcome: 'done', ...planOf(topics, from, targets) };
  if (audit === undefined) return report;
  if (opts.dryRun === true) {
    await audit.sink.append(group, report);
    return report;
  }
  try {
    await audit.sink.append(group, report);
    return report;
  } catch (err) {
    audit.background.lost(group, err, { entry: report });
    return { ...report, auditFailure: failureOf(err) };
  }
}
