/**
 * What both Kafka adapters do with their partition lanes (src/transport/in-flight-window.ts) once
 * records are taken: start them while a lane's window has room and the member's bound on records
 * in hand (`maxInHand`, over all lanes) is not reached; when one finishes, hand the place freed to
 * the other lanes first (round robin: with fewer places than partitions every partition gets its
 * turn); arrange a redelivery when a lane asks for one; let a lane paused for having too many
 * records waiting ({@link LANE_HIGH}) fetch again once down to {@link LANE_LOW}. The adapter does
 * the client's part (pause, resume, seek, commit) through {@link LaneHooks}.
 * Adapter-neutral: no client here. Spec: issue 8 (push delivery: lanes, in-flight window, per-key order).
 */
import type { LaneRecord, PartitionLane } from './in-flight-window.js';
import type { RunOutcome } from './record-runner.js';

/** A lane with this many records waiting stops fetching its partition; it fetches again once down to LANE_LOW. */
export const LANE_HIGH = 1000;
export const LANE_LOW = 250;

/** The client's part. */
export interface LaneHooks<R extends LaneRecord> {
  /**
   * Handles one record and calls `then(outcome, record, lane)` once, on a later turn; never throws
   * (the record runner's {@link RecordRunner.runThen}: no promise or closure of the pump's per record).
   */
  run(record: R, lane: PartitionLane<R>, then: (outcome: RunOutcome, record: R, lane: PartitionLane<R>) => void): void;
  /** The lane bookkeeping after a record failed (a defect): the adapter stops the consumption with it. */
  fault(err: unknown): void;
  /** The member is stopping: nothing new starts. */
  stopping(): boolean;
  /** A record was processed (commit cadence). */
  processed(): void;
  /** The lane restarts at `r.offset` after `r.afterMs` ms: position the partition there, fetch nothing of it until then, then `lane.resume()` and {@link LanePump.wake}. */
  redeliver(lane: PartitionLane<R>, r: { readonly offset: bigint; readonly afterMs: number }): void;
  /** The lane was paused for backpressure (`lane.paused`) and is down to {@link LANE_LOW}: fetch it again (the hook clears `lane.paused`). */
  unpause(lane: PartitionLane<R>): void;
}

/** A Map of lanes that counts its changes, so the pump's array of them is rebuilt only after one. */
export class LaneMap<R extends LaneRecord> extends Map<string, PartitionLane<R>> {
  version = 0;
  override set(key: string, lane: PartitionLane<R>): this {
    this.version++;
    return super.set(key, lane);
  }
  override delete(key: string): boolean {
    this.version++;
    return super.delete(key);
  }
  override clear(): void {
    this.version++;
    super.clear();
  }
}

export class LanePump<R extends LaneRecord> {
  /** The member's lanes, one per partition held. */
  readonly lanes = new LaneMap<R>();
  /** The lanes in the Map's order, as of `#listed` (wake runs per finished record: no iterators there). */
  #list: PartitionLane<R>[] = [];
  #listed = -1;
  readonly #maxInHand: number;
  readonly #hooks: LaneHooks<R>;
  #inHand = 0;
  /** Waiting for no record to be in hand ({@link idle}). */
  #idleWaiters: (() => void)[] = [];

  /** `maxInHand`: records in hand over all lanes at once (integer ≥ 1). */
  constructor(maxInHand: number, hooks: LaneHooks<R>) {
    this.#maxInHand = Math.max(1, Math.floor(maxInHand));
    this.#hooks = hooks;
  }

  /** Records in hand over all lanes. */
  get inHand(): number {
    return this.#inHand;
  }

  /**
   * Resolves once no record is in hand (at once when none is): what a stopping member waits for.
   * A count, not a promise kept per record: that cost a promise, a closure and a Set entry per record.
   */
  idle(): Promise<void> {
    if (this.#inHand === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Starts the lane's records while its window and the member's bound allow. A record is only
   * started when it can be delivered now: waiting in a sink's own queue it would hold up its
   * partition's commit and cost its decoding early.
   */
  pump(lane: PartitionLane<R>): void {
    if (this.#hooks.stopping()) return;
    while (this.#inHand < this.#maxInHand) {
      const r = lane.start();
      if (r === undefined) return;
      this.#inHand++;
      // `run` never throws; `#finished` never throws (a defect there goes to `fault`).
      this.#hooks.run(r, lane, this.#finished);
    }
  }

  /** Offers free places to every lane, beginning with the one after `last` and ending with `last` (or with all, from the first). */
  wake(last?: PartitionLane<R>): void {
    // Called once per finished record: two indexed passes over the lanes, nothing allocated per call.
    const lanes = this.#lanes();
    let after = last === undefined;
    for (let i = 0; i < lanes.length; i++) {
      if (this.#inHand >= this.#maxInHand) return;
      const lane = lanes[i]!;
      if (after) this.pump(lane);
      else if (lane === last) after = true;
    }
    if (last === undefined) return; // the first pass offered every lane
    for (let i = 0; i < lanes.length; i++) {
      if (this.#inHand >= this.#maxInHand) return;
      const lane = lanes[i]!;
      this.pump(lane);
      if (lane === last) return;
    }
  }

  /** The lanes as an array, rebuilt after the Map changed. */
  #lanes(): readonly PartitionLane<R>[] {
    const version = this.lanes.version;
    if (version !== this.#listed) {
      this.#list = [...this.lanes.values()];
      this.#listed = version;
    }
    return this.#list;
  }

  /** A record's outcome, from the runner (one function for every record: `run` hands back the record and its lane). */
  readonly #finished = (outcome: RunOutcome, r: R, lane: PartitionLane<R>): void => {
    this.#inHand--;
    try {
      this.#settle(lane, r, outcome);
    } catch (err) {
      this.#hooks.fault(err);
    }
    if (this.#inHand === 0 && this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w();
    }
  };

  #settle(lane: PartitionLane<R>, r: R, outcome: RunOutcome): void {
    const stopped = outcome === 'failed' || outcome === 'abandoned';
    const after = lane.finish(r.offset, stopped ? { kind: 'stopped' } : outcome);
    if (!stopped && outcome.kind === 'done') this.#hooks.processed();
    if (this.#hooks.stopping()) return;
    if (!lane.revoked && after !== undefined) this.#hooks.redeliver(lane, after);
    this.wake(lane);
    if (!lane.revoked && lane.paused && !lane.halted && lane.waiting <= LANE_LOW) this.#hooks.unpause(lane);
  }
}
