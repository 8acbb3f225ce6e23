/**
 * A replay's state on the subscription's stored record (the definitions topic), which is how the
 * gateway instances coordinate one: while `phase` is `pausing` and its lease has not run out,
 * every instance's reconciler runs the subscription as paused (its member leaves the group), so
 * the instance that took the request can commit the new offsets (Kafka refuses while the group has
 * members). That instance then writes `done` (or `failed`, with the reason) and the members start
 * again from the new offsets.
 *
 * The lease (`leaseUntil`) makes it safe when that instance dies mid-way: once the lease has run
 * out every instance runs the subscription again, whatever the record says, and the record shows
 * what happened (`pausing` with a past `leaseUntil`: the coordinating instance did not finish;
 * whether the offsets moved shows in the audit log, which is written right after the commit, or
 * after a failure with what moved).
 * Instances compare `leaseUntil` with their own clock: keep the clocks in sync (NTP).
 * Spec: issue 9 ("Coordinate through the subscription's stored state").
 */
import { z } from 'zod';

export const replayPhases = ['pausing', 'done', 'failed'] as const;
export type ReplayPhase = (typeof replayPhases)[number];

/** The replay state stored with a subscription. Times are RFC 3339 UTC. */
export interface StoredReplay {
  /** A random id per replay. */
  readonly id: string;
  readonly phase: ReplayPhase;
  readonly requestedAt: string;
  /** After this instant the pause no longer holds (every instance resumes delivery). */
  readonly leaseUntil: string;
  /** The instance coordinating the replay (`INSTANCE_ID`). */
  readonly instance: string;
  readonly finishedAt?: string;
  /** Why a replay failed. */
  readonly reason?: string;
}

export const storedReplaySchema = z.object({
  id: z.string().min(1).max(100),
  phase: z.enum(replayPhases),
  requestedAt: z.string(),
  leaseUntil: z.string(),
  instance: z.string().max(200),
  finishedAt: z.string().optional(),
  reason: z.string().max(1000).optional(),
});

/** True while `replay` pauses its subscription at `nowMs` (epoch ms). */
export function replayHolds(replay: StoredReplay | undefined, nowMs: number): boolean {
  return replay !== undefined && replay.phase === 'pausing' && Date.parse(replay.leaseUntil) > nowMs;
}

/** What `GET /subscriptions/{name}` shows of the last replay: the stored state, `expired` for a pause whose lease ran out. */
export function replayStatus(replay: StoredReplay, nowMs: number): Omit<StoredReplay, 'phase'> & { readonly phase: ReplayPhase | 'expired' } {
  return replay.phase === 'pausing' && !replayHolds(replay, nowMs) ? { ...replay, phase: 'expired' } : replay;
}
