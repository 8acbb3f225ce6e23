/**
 * Replays of the subscriptions stored on the definitions topic (the ones `POST /subscriptions`
 * creates), coordinated across every gateway instance through the subscription's stored state:
 *
 * 1. The request is validated and `to` resolved to offsets (see plan.ts); a dry run stops here,
 *    reporting from the group's committed offsets.
 * 2. The subscription's record gets a replay state `pausing` with a lease (default 60 s); every
 *    instance's reconciler sees it within about a second and stops its member, which commits
 *    what it handled and leaves the group.
 * 3. This instance waits until the group has no member (at most the lease minus 10 s), reads the
 *    positions (`from`) and commits the new offsets.
 * 4. The replay is appended to the audit log, then the state becomes `done` and every instance
 *    starts its member again, from the new offsets. The offsets moved, so the answer is the
 *    report even when the entry could not be written (`auditFailure` says so; logged and counted):
 *    an error would have the operator replay again. On a failure the state becomes `failed` with
 *    the reason (delivery resumes), and the audit log gets the replay with outcome `partial` (the
 *    topics whose commit went through, and what did not move) or `failed` (nothing moved): both
 *    written behind the error's answer (audit.ts BackgroundAuditWrites; the state below), which
 *    comes as soon as the replay failed, as `kafka-consumer-groups --reset-offsets` fails at once;
 *    should this instance die, the lease runs out and delivery resumes by itself.
 *
 * Every state write goes onto the subscription's newest record, and is written again when another
 * instance's change landed in between (state-write.ts): a `PATCH` stored elsewhere during the
 * replay (a pause) stays. A retry of a failed replay sent to this instance right after its answer
 * is taken even while the `failed` state is still being written (this instance knows its replay
 * ended; the retry's pause goes on after that write); another instance sees the state within about
 * a second while the broker answers, and until then refuses the retry (409) as one under way.
 *
 * A subscription that reads `<group>.retry` (`ordering: none`) keeps its position there: only the
 * catalog topics move, and records parked for a retry are still retried.
 * Spec: issue 9 ("Replay by offset reset").
 */
import { randomUUID } from 'node:crypto';
import { GatewayError, errorMessage, isGatewayError } from '../../../core/errors.js';
import type { Logger } from '../../../observability/index.js';
import type { TopicPartitionOffset, Transport } from '../../../transport/port.js';
import { DEFAULT_OWNER, groupOf } from '../model.js';
import { startPositionsOf } from '../stored.js';
import type { SubscriptionStore } from '../store.js';
import { BackgroundAuditWrites, failedReplayEntry, failureOf } from './audit.js';
import type { ReplayAnswer, ReplayAuditEntry, ReplayLog } from './audit.js';
import { planOf, positionsOf, resolveTarget } from './plan.js';
import type { ReplayOffsets } from './plan.js';
import { commitWhenIdle } from './reset.js';
import type { CommitProgress } from './reset.js';
import { replayHolds } from './state.js';
import type { StoredReplay } from './state.js';
import { deletedDuringReplay, storeReplayState } from './state-write.js';
import { parseReplayRequest, verbatimTo } from './target.js';

/** How long a replay may pause a subscription before every instance resumes it anyway, ms. */
export const REPLAY_LEASE_MS = 60_000;

export interface ReplayCoordinatorDeps {
  readonly store: SubscriptionStore;
  readonly audit: ReplayLog;
  readonly transport: Transport;
  /** The topics of a subscription's kinds. */
  readonly topicsOf: (kinds: readonly string[]) => string[];
  /** This instance (`INSTANCE_ID`), written into the replay state. */
  readonly instance: string;
  readonly log: Logger;
  /**
   * True when a connector file declares the subscription of this consumer group (not replayable
   * here), also when a stored one of the same owner and name exists: the file's runs, the stored
   * one is not (docs/subscriptions.md "a file wins").
   */
  readonly declared?: (group: string) => boolean;
  /**
   * The connector file's subscription that shadows the stored one of consumer group `group` by
   * name (a stored subscription of the anonymous owner named like a file's of another owner: the
   * file's runs, the stored one is not — docs/subscriptions.md "a file wins"), or undefined.
   */
  readonly shadowedBy?: (group: string) => { readonly owner: string; readonly group: string; readonly reason: string } | undefined;
  /**
   * Where the entries of failed replays are written behind the error's answer (shared with the
   * process's library replays, so one close waits for both); default one of its own.
   */
  readonly background?: BackgroundAuditWrites;
  /** Default {@link REPLAY_LEASE_MS}. */
  readonly leaseMs?: number;
  readonly now?: () => number;
}

function notFound(name: string): GatewayError {
  return new GatewayError('CEG_NOT_FOUND', `no subscription named ${name.slice(0, 100)}`, { retriable: false, details: { field: 'name' } });
}

export class ReplayCoordinator {
  readonly #d: ReplayCoordinatorDeps;
  readonly #leaseMs: number;
  readonly #background: BackgroundAuditWrites;
  /**
   * The replays of this instance that ended in a failure whose `failed` state is still being
   * written, by group: their pause no longer holds for this instance (a retry is taken), and the
   * retry's own pause is written after it (in the topic's order).
   */
  readonly #ending = new Map<string, { readonly id: string; readonly written: Promise<void> }>();

  constructor(deps: ReplayCoordinatorDeps) {
    this.#d = deps;
    this.#leaseMs = deps.leaseMs ?? REPLAY_LEASE_MS;
    this.#background = deps.background ?? new BackgroundAuditWrites(deps.log);
  }

  /** The audit entries of failed replays being written behind their answers (count, failures, settled()). */
  get background(): BackgroundAuditWrites {
    return this.#background;
  }

  /** How many failed replays' `failed` states are being written behind their answers now. */
  get ending(): number {
    return this.#ending.size;
  }

  /** Resolves once every `failed` state being written behind its answer is written, or given up (logged). Never rejects. */
  async settled(): Promise<void> {
    while (this.#ending.size > 0) await Promise.all([...this.#ending.values()].map((e) => e.written));
  }

  #now(): number {
    return this.#d.now?.() ?? Date.now();
  }

  /**
   * Replays (or, with `dryRun`, plans) subscription `name` as `body` asks; `by` is who asked.
   * Resolves with the audit entry (the answer); a finished replay whose entry could not be written
   * with it and `auditFailure` (a dry run's is the error: nothing happened).
   * Errors: CEG_NOT_FOUND; CEG_CONFLICT (a replay of it is under way; a subscription declared in
   *   a connector file, or a stored one such a file shadows: `details.shadowedBy`); CEG_INVALID_REPLAY naming the field; CEG_REPLAY_FAILED (retriable: the
   *   group kept members); the transport's (CEG_BROKER_UNAVAILABLE, retriable).
   */
  async replay(name: string, body: unknown, by: string, owner: string = DEFAULT_OWNER): Promise<ReplayAnswer> {
    const group = groupOf(owner, name);
    // Before the stored record: a file's subscription of the same name shadows it, and its members
    // never take the pause, so a replay moved the offsets under a running member and then stalled.
    if (this.#d.declared?.(group) === true) {
      throw new GatewayError('CEG_CONFLICT', `subscription ${name} is declared in a connector file: its members are not coordinated through the definitions topic; replay it with bus.replay() in the process that runs it`, { retriable: false, details: { field: 'name' } });
    }
    const s = this.#d.store.get(group);
    if (s === undefined) throw notFound(name);
    // A stored subscription a file shadows by name is not run: moving its offsets would answer 200
    // for a replay whose sink never gets an event (a pull of it is 409 alike).
    const shadow = this.#d.shadowedBy?.(group);
    if (shadow !== undefined) {
      throw new GatewayError('CEG_CONFLICT', `subscription ${name.slice(0, 100)} is not run, so it cannot be replayed: ${shadow.reason}`, { retriable: false, details: { field: 'name', shadowedBy: { owner: shadow.owner, group: shadow.group } } });
    }
    const topics = this.#d.topicsOf(s.kinds);
    const req = parseReplayRequest(body, topics);
    // A pause of this instance's own replay that failed holds no more (its `failed` state is on its way).
    if (!req.dryRun && replayHolds(s.replay, this.#now()) && s.replay!.id !== this.#ending.get(group)?.id) {
      throw new GatewayError('CEG_CONFLICT', `a replay of ${name} is under way (until ${s.replay!.leaseUntil} at the latest); try again after it`, { retriable: false, details: { field: 'name' } });
    }
    const targets = await resolveTarget(this.#d.transport, topics, req.target);
    const head = (): Pick<ReplayAuditEntry, 'at' | 'by' | 'to' | 'dryRun'> => ({ at: new Date(this.#now()).toISOString(), by, to: verbatimTo(req.to), dryRun: req.dryRun });
    const entryOf = (from: ReplayOffsets): ReplayAuditEntry => ({ ...head(), outcome: 'done', ...planOf(topics, from, targets) });
    // A replay that paused delivery and then failed: what moved (the topics whose commit went
    // through) and what did not, with the error — the operator sees a partial move in the log.
    const recordFailure = async (progress: CommitProgress, err: unknown): Promise<void> => {
      await this.#d.audit.append(group, failedReplayEntry(head(), topics, targets, progress, err));
    };
    // Members of stored subscriptions start at the end where nothing is committed (start was committed
    // at create), or where the definition keeps a start for a kind added by PATCH (startAt).
    const startAt = startPositionsOf(s, Date.now());
    if (req.dryRun) {
      // Nothing moved: a dry run whose entry cannot be written answers the error (ask again).
      const entry = entryOf(await positionsOf(this.#d.transport, group, targets, 'latest', startAt));
      await this.#d.audit.append(group, entry);
      return entry;
    }
    return await this.#pauseAndCommit(group, targets, entryOf, recordFailure, startAt);
  }

  /** The audit entries of subscription `name`, oldest first. Errors: CEG_NOT_FOUND; the transport's. */
  async list(name: string, owner: string = DEFAULT_OWNER): Promise<readonly ReplayAuditEntry[]> {
    const group = groupOf(owner, name);
    const entries = await this.#d.audit.list(group);
    if (entries.length === 0 && this.#d.store.get(group) === undefined) throw notFound(name);
    return entries;
  }

  async #pauseAndCommit(group: string, targets: ReplayOffsets, entryOf: (from: ReplayOffsets) => ReplayAuditEntry, recordFailure: (progress: CommitProgress, err: unknown) => Promise<void>, startAt: readonly TopicPartitionOffset[]): Promise<ReplayAnswer> {
    const log = this.#d.log.child({ subscription: group });
    // After the `failed` state of this instance's last replay of it: else that record could land
    // after this pause and end it (never rejects).
    await this.#ending.get(group)?.written;
    const now = this.#now();
    const base: StoredReplay = { id: randomUUID(), phase: 'pausing', requestedAt: new Date(now).toISOString(), leaseUntil: new Date(now + this.#leaseMs).toISOString(), instance: this.#d.instance };
    await this.#setReplay(group, base);
    log.info({ replay: base.id, leaseUntil: base.leaseUntil }, 'replay: delivery paused on every instance');
    let from: ReplayOffsets;
    const progress: CommitProgress = { committed: [] };
    // Asked again while it waits after a commit of some topics went through: then the error names
    // what moved (reset.ts) instead of saying nothing was moved.
    const nothing = (by = ''): string => (progress.committed.length === 0 ? `; nothing was moved${by}` : '');
    try {
      // Two replays at once: the later pause record wins; the earlier one gives up before committing.
      const proceed = (): void => {
        // Deleted meanwhile (a DELETE on any instance): said as such, not as a replay that took over.
        if (this.#d.store.get(group) === undefined) throw deletedDuringReplay(group, nothing());
        if (this.#d.store.get(group)?.replay?.id !== base.id) throw new GatewayError('CEG_CONFLICT', `another replay of this subscription started meanwhile and took over${nothing(' by this one')}`, { retriable: false, details: { field: 'name' } });
        if (this.#now() >= Date.parse(base.leaseUntil)) throw new GatewayError('CEG_REPLAY_FAILED', `the replay's lease ran out before the group was empty${nothing()}`, { retriable: true, details: { group } });
      };
      from = await commitWhenIdle(this.#d.transport, group, targets, 'latest', Math.max(1000, this.#leaseMs - 10_000), undefined, proceed, startAt, progress);
    } catch (err) {
      // The audit entry and the `failed` state, behind the answer: with the broker down each write
      // waits for it (up to its 10 s read-back) and the caller with it, for an error it can act on
      // now — as `kafka-consumer-groups --reset-offsets` fails at once. Tracked, not floating: a
      // failure to write is logged (the entry's also counted, BackgroundAuditWrites); the state's
      // is the lease's to end. The entry is written whatever the end (deleted meanwhile too: the log
      // is keyed by the group).
      if (!isGatewayError(err) || err.code === 'CEG_INTERNAL') log.error({ replay: base.id, err: errorMessage(err), moved: progress.committed }, 'replay: failed unexpectedly');
      this.#background.start(group, () => recordFailure(progress, err), { replay: base.id, moved: [...progress.committed] });
      if (this.#d.store.get(group) === undefined) throw err; // deleted: no record left to mark
      this.#endBehind(group, { ...base, phase: 'failed', finishedAt: new Date(this.#now()).toISOString(), reason: errorMessage(err).slice(0, 1000) });
      throw err;
    }
    log.info({ replay: base.id }, 'replay: offsets committed');
    // Before `done`: should this instance die now, the audit log still shows the move. The offsets
    // moved whatever this write does: a failure to write is reported in the answer, not as its
    // error (a retry would move them again), and logged with the whole entry and counted.
    const entry = entryOf(from);
    let auditFailure: ReplayAnswer['auditFailure'];
    try {
      await this.#d.audit.append(group, entry);
    } catch (err) {
      auditFailure = failureOf(err);
      this.#background.lost(group, err, { replay: base.id, entry });
    }
    await this.#setReplay(group, { ...base, phase: 'done', finishedAt: new Date(this.#now()).toISOString() }).catch((e: unknown) => log.error({ replay: base.id, err: errorMessage(e) }, 'replay: could not store its end; delivery resumes when the lease runs out'));
    return auditFailure === undefined ? entry : { ...entry, auditFailure };
  }

  /** Stores a failed replay's end without waiting for it: tracked in {@link #ending} until written or given up (logged). */
  #endBehind(group: string, replay: StoredReplay): void {
    const log = this.#d.log.child({ subscription: group });
    const written: Promise<void> = this.#setReplay(group, replay)
      .catch((e: unknown) => log.error({ replay: replay.id, err: errorMessage(e) }, 'replay: could not store the failure; delivery resumes when the lease runs out'))
      .finally(() => {
        if (this.#ending.get(group)?.written === written) this.#ending.delete(group);
      });
    this.#ending.set(group, { id: replay.id, written });
  }

  /** Stores the replay state on the subscription's newest record, kept there against other instances' changes (state-write.ts). Errors: as storeReplayState. */
  async #setReplay(group: string, replay: StoredReplay): Promise<void> {
    await storeReplayState(this.#d.store, group, replay);
  }
}
