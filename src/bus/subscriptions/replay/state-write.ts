/**
 * Writing a replay's state onto its subscription's stored record without undoing another
 * instance's change. The state is one field (`replay`) of the record, the definitions topic keeps
 * one value per subscription, and the later record wins everywhere (store.ts): so a record built
 * from this instance's copy alone replaced whatever another instance stored that had not reached
 * this one yet — a `PATCH` pausing the subscription during its replay was undone by the replay's
 * `done`, and delivery resumed. The write is therefore a compare-and-set over the topic's one order:
 *
 * 1. Re-read: this instance catches up with the topic (every record written before now applied),
 *    and the state is merged into that record.
 * 2. The record is written, and every record of the subscription this instance applies until it
 *    reads its own back is noted: those before its own landed between the record it was built on
 *    and it (a change made at that very moment), and it replaced them on every instance.
 * 3. Then it writes again on top of the last of those: the state merged in; or that record back
 *    as it was when the state must not go onto it (a later replay's state, a subscription of the
 *    same name created after a delete); or, after a delete, the delete again — until nothing landed
 *    in between (at most {@link MAX_STATE_WRITES} writes).
 *
 * Between a record that replaced another and the write that puts it right, instances see the
 * replaced one for a moment: step 1 makes that a race of the few milliseconds between the catch-up
 * and the write, where it was the whole lag of this instance's reading (about a second).
 * Spec: issue 9 ("Coordinate through the subscription's stored state"); Kafka log compaction (the
 *   latest record per key is the value).
 */
import { GatewayError } from '../../../core/errors.js';
import type { StoredSubscription } from '../stored.js';
import type { SubscriptionStore } from '../store.js';
import type { StoredReplay } from './state.js';

/** Writes of one state before it gives up because the record changed each time. */
export const MAX_STATE_WRITES = 5;

/** `nothing`: what the message says of the offsets (`; nothing was moved`, or empty once some moved: the error then names them, reset.ts). */
export function deletedDuringReplay(group: string, nothing = '; nothing was moved'): GatewayError {
  return new GatewayError('CEG_NOT_FOUND', `the subscription ${group} was deleted during its replay${nothing}`, { retriable: false, details: { field: 'name' } });
}

/** The same replay state (as written, and as read back from the topic). */
function sameState(a: StoredReplay | undefined, b: StoredReplay | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.id === b.id && a.phase === b.phase && a.leaseUntil === b.leaseUntil && a.finishedAt === b.finishedAt && a.reason === b.reason;
}

/**
 * Whether `applied` (a record read from the topic, `undefined` = a delete) is the one written as
 * `written` (`null` = a delete). Every other writer of a subscription's record changes its
 * `generation` (PATCH, the gateway's own state) or writes a replay state of its own id, so a
 * record of the same generation, creation and replay state is this one (or one just like it).
 */
function isWritten(applied: StoredSubscription | undefined, written: StoredSubscription | null): boolean {
  if (written === null || applied === undefined) return written === null && applied === undefined;
  return applied.generation === written.generation && applied.createdAt === written.createdAt && sameState(applied.replay, written.replay);
}

/**
 * Writes `record` (`null`: deletes the subscription) and resolves with every record of `group`
 * this instance applied from then until it read its own back, in the topic's order (`undefined`:
 * a delete), its own among them. Errors: the store's.
 */
async function writeNoting(store: SubscriptionStore, group: string, record: StoredSubscription | null, timeoutMs: number): Promise<(StoredSubscription | undefined)[]> {
  const seen: (StoredSubscription | undefined)[] = [];
  let last = store.get(group);
  // The store applies each record as a new object: a change of the group's value is a record of it.
  const off = store.onChange((all) => {
    const now = all.get(group);
    if (now === last) return;
    last = now;
    seen.push(now);
  });
  try {
    if (record === null) await store.remove(group, timeoutMs);
    else await store.put(record, timeoutMs);
  } finally {
    off();
  }
  return seen;
}

/**
 * Stores `replay` as the state of subscription `group` (see the module's comment): on the
 * subscription's newest record; not at all (nor anything else) when the replay's end finds a later
 * replay's state there (`pausing` always goes on: of two pauses the later record wins, and the
 * earlier replay gives up, coordinator.ts). `timeoutMs` bounds each catch-up and each write's read-back, ms.
 * Errors: CEG_NOT_FOUND when the subscription is deleted (the write never brings it back: a delete
 *   that landed in between is written again); CEG_REPLAY_FAILED (retriable) when the record changed
 *   in between on each of {@link MAX_STATE_WRITES} writes; the store's (CEG_BROKER_UNAVAILABLE,
 *   retriable, when not read back within `timeoutMs`).
 */
export async function storeReplayState(store: SubscriptionStore, group: string, replay: StoredReplay, timeoutMs = 10_000): Promise<void> {
  await store.catchUp(timeoutMs);
  const first = store.get(group);
  if (first === undefined) throw deletedDuringReplay(group);
  let base: StoredSubscription | undefined = first;
  let wrote = false;
  let deleted = false;
  for (let n = 1; ; n++) {
    // What goes on top of `base`, the newest record: the state merged in; once a write of this
    // replaced `base` on every instance, `base` back where the state must not go onto it.
    let next: StoredSubscription | null;
    if (base === undefined || base.createdAt !== first.createdAt) {
      deleted = true;
      if (!wrote) break;
      next = base ?? null;
    } else if (replay.phase !== 'pausing' && base.replay !== undefined && base.replay.id !== replay.id) {
      if (!wrote) break; // a later replay took over: its state stays
      next = base;
    } else {
      next = { ...base, replay };
    }
    const seen = await writeNoting(store, group, next, timeoutMs);
    wrote = true;
    const own = seen.findIndex((r) => isWritten(r, next));
    // Nothing landed in between; or its own record was not applied (a reader ignored it); or
    // records came after its own: their writers built them on it or later, they stand.
    if (own <= 0 || own < seen.length - 1) break;
    if (n >= MAX_STATE_WRITES) throw new GatewayError('CEG_REPLAY_FAILED', `the stored record of ${group} changed on another instance during each of ${MAX_STATE_WRITES} writes of its replay state`, { retriable: true, details: { group } });
    base = seen[own - 1];
  }
  if (deleted) throw deletedDuringReplay(group);
}
