/**
 * Changing a subscription's stored record without undoing another writer's change: the one
 * read-modify-write of the definitions topic, for every writer of an existing record (a replay's
 * state, `PATCH /subscriptions/{name}`, the gateway's own state such as `gone`). The topic keeps
 * one value per subscription and the later record wins everywhere (store.ts), so a record built on
 * this instance's copy alone replaced whatever was stored meanwhile that had not reached this
 * instance (or this writer) yet: a `PATCH` built on a copy with a replay's `pausing` and stored
 * right after that replay's `done` put `pausing` back, holding delivery until the lease ran out. The
 * write is therefore a compare-and-set over the topic's one order:
 *
 * 1. Re-read: this instance catches up with the topic (every record written before now applied),
 *    and the change is applied to that record, the newest.
 * 2. The record is written, and every record of the subscription this instance applies until it
 *    reads its own back is noted: those before its own landed between the record it was built on
 *    and it (a change made at that very moment), and it replaced them on every instance.
 * 3. Then it writes again on top of the last of those: the change applied to it; or that record
 *    back as it was when the change must not go onto it (the change says so: a later replay's
 *    state, a subscription deleted, or of the same name created after a delete) — until nothing
 *    landed in between (at most {@link MAX_RECORD_WRITES} writes).
 *
 * Between a record that replaced another and the write that puts it right, instances see the
 * replaced one for a moment: step 1 makes that a race of the few milliseconds between the catch-up
 * and the write, where it was the whole lag of this instance's reading (about a second).
 * Spec: issue 9 ("Coordinate through the subscription's stored state"); Kafka log compaction (the
 *   latest record per key is the value).
 */
import type { GatewayError } from '../../core/errors.js';
import { parseStored } from './stored.js';
import type { StoredSubscription } from './stored.js';
import type { SubscriptionStore } from './store.js';

/** Writes of one change before it gives up because the record changed each time. */
export const MAX_RECORD_WRITES = 5;

/**
 * What a change makes of the newest record (`undefined`: the subscription is deleted): the record
 * to write, or `undefined` when the change does not go onto it (nothing is written; on a write
 * again, that record goes back as it was). Called once per write; it may throw: before the first
 * write that is the writer's error (nothing written), after it that record goes back and the
 * error is thrown.
 */
export type RecordChange = (newest: StoredSubscription | undefined) => StoredSubscription | undefined | Promise<StoredSubscription | undefined>;

/**
 * Whether `applied` (a record read from the topic, `undefined` = a delete) is the one written as
 * `written` (`null` = a delete): the same stored value, read as the store reads it (parseStored
 * of the JSON written). Two writers' records can share a generation (two PATCHes built on one
 * record, or a replay's state that keeps it), so nothing less than the whole value tells them apart.
 */
function isWritten(applied: StoredSubscription | undefined, written: StoredSubscription | null): boolean {
  if (written === null || applied === undefined) return written === null && applied === undefined;
  const read = parseStored(JSON.parse(JSON.stringify(written)));
  return read.ok && JSON.stringify(read.value) === JSON.stringify(applied);
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

export interface RecordWriteOptions {
  /** Bounds each catch-up and each write's read-back, ms. Default 10 s. */
  readonly timeoutMs?: number;
  /** The error when the record changed in between on each of {@link MAX_RECORD_WRITES} writes (retriable: sending it again works). */
  readonly changedEachTime: () => GatewayError;
}

/**
 * Applies `change` to the newest record of subscription `group` and stores the result, kept there
 * against records other writers store at that moment (see the module's comment). Resolves with
 * the record the change made on its last write, `undefined` when it made none or that write put
 * the record it would not go onto back.
 * Errors: `change`'s; `changedEachTime()` when the record changed in between on each of
 *   {@link MAX_RECORD_WRITES} writes; the store's (CEG_BROKER_UNAVAILABLE, retriable, when not
 *   caught up or not read back within `timeoutMs`).
 */
export async function writeOnNewest(store: SubscriptionStore, group: string, change: RecordChange, opts: RecordWriteOptions): Promise<StoredSubscription | undefined> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  await store.catchUp(timeoutMs);
  let base = store.get(group);
  let wrote = false;
  let made: StoredSubscription | undefined;
  // The change's error on a write again: the record goes back, then it is thrown.
  let failure: { readonly err: unknown } | undefined;
  for (let n = 1; ; n++) {
    let own: StoredSubscription | undefined;
    if (failure === undefined) {
      try {
        own = await change(base);
      } catch (err) {
        if (!wrote) throw err;
        failure = { err };
      }
    }
    // What goes on top of `base`, the newest record: the change applied to it; once a write of
    // this replaced `base` on every instance, `base` back where the change must not go onto it.
    if (own === undefined && !wrote) break;
    const next = own ?? base ?? null;
    made = own;
    const seen = await writeNoting(store, group, next, timeoutMs);
    wrote = true;
    const at = seen.findIndex((r) => isWritten(r, next));
    // Nothing landed in between; or its own record was not applied (a reader ignored it); or
    // records came after its own: their writers built them on it or later, they stand.
    if (at <= 0 || at < seen.length - 1) break;
    if (n >= MAX_RECORD_WRITES) throw opts.changedEachTime();
    base = seen[at - 1];
  }
  if (failure !== undefined) throw failure.err;
  return made;
}
