/**
 * Writing a replay's state onto its subscription's stored record without undoing another
 * instance's change. The state is one field (`replay`) of the record, the definitions topic keeps
 * one value per subscription, and the later record wins everywhere (store.ts): so a record built
 * from this instance's copy alone replaced whatever another instance stored that had not reached
 * this one yet — a `PATCH` pausing the subscription during its replay was undone by the replay's
 * `done`, and delivery resumed. The state is written as every change of a stored record is, a
 * compare-and-set over the topic's one order (record-write.ts): merged into the newest record, and
 * written again on top of a record that landed in between.
 * Spec: issue 9 ("Coordinate through the subscription's stored state"); Kafka log compaction (the
 *   latest record per key is the value).
 */
import { GatewayError } from '../../../core/errors.js';
import { MAX_RECORD_WRITES, writeOnNewest } from '../record-write.js';
import type { StoredSubscription } from '../stored.js';
import type { SubscriptionStore } from '../store.js';
import type { StoredReplay } from './state.js';

/** Writes of one state before it gives up because the record changed each time. */
export const MAX_STATE_WRITES = MAX_RECORD_WRITES;

/** `nothing`: what the message says of the offsets (`; nothing was moved`, or empty once some moved: the error then names them, reset.ts). */
export function deletedDuringReplay(group: string, nothing = '; nothing was moved'): GatewayError {
  return new GatewayError('CEG_NOT_FOUND', `the subscription ${group} was deleted during its replay${nothing}`, { retriable: false, details: { field: 'name' } });
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
  // The subscription the replay is of: the record it first goes onto (a delete, or a subscription
  // of the same name created after one, ends it).
  let first: StoredSubscription | undefined;
  let deleted = false;
  await writeOnNewest(
    store,
    group,
    (base) => {
      first ??= base;
      if (base === undefined || first === undefined || base.createdAt !== first.createdAt) {
        deleted = true;
        return undefined;
      }
      // A later replay took over: its state stays.
      if (replay.phase !== 'pausing' && base.replay !== undefined && base.replay.id !== replay.id) return undefined;
      return { ...base, replay };
    },
    { timeoutMs, changedEachTime: () => new GatewayError('CEG_REPLAY_FAILED', `the stored record of ${group} changed on another instance during each of ${MAX_STATE_WRITES} writes of its replay state`, { retriable: true, details: { group } }) },
  );
  if (deleted) throw deletedDuringReplay(group);
}
