import { Buffer } from 'node:buffer';
import { setMaxListeners } from 'node:events';

/**
 * A per-partition lane (one `PartitionLane` per partition a member holds): fetched records are
 * taken into it and the fetch loop goes on, so one partition's slow records never hold up the
 * next fetch of the others; up to `width` records of the partition are in its handler at once.
 * Two orders:
 * - `offset` (ordering none; width 1 = strictly one after the other, a retry topic): records start
 *   in offset order and finish in any order; a slow record holds up only itself.
 * - `key` (ordering key, like Confluent Parallel Consumer's KEY ordering): records of different
 *   keys run concurrently (up to `width`), records of one key strictly one after the other in
 *   offset order — a record starts only once the previous record of its key has finished. Of the
 *   records that may start, the lowest offset starts first. The key is the record key's bytes;
 *   records without a key (null) count as one key together (serial, the safe choice: nothing says
 *   two keyless records are independent).
 * The offset to commit is the lowest record not finished yet (or, with nothing in hand or waiting,
 * the one after the last taken), so a commit never passes an unfinished record (at-least-once,
 * bus spec S3) however the handlers' finishing order falls. Offsets need not be contiguous
 * (compaction, transaction markers): the lane keeps the taken offsets in order.
 * - `redeliver` of a record: nothing new starts on the partition (whatever the key: the partition
 *   is sought back, so a retrying record holds its whole partition as with one record at a time,
 *   never the other partitions); once the records in hand are finished the lane restarts at its
 *   lowest unfinished record (`restartAt`: the redelivered one, or a record of another key that
 *   was still waiting below it). Records after it that finished meanwhile are remembered and not
 *   handled again when they are fetched again.
 * Adapter-neutral: it sees offsets, keys and decisions, never a client.
 * Spec: issue 8 ("ordering none: a per-partition in-flight window … commits only up to the lowest
 *   unfinished offset"; "per-key order for ordering: key"); keylanes brief (per-key lanes).
 */

/** How a lane orders the records of its partition (see {@link PartitionLane}). */
export type LaneOrder = 'offset' | 'key';

interface Taken<R> {
  readonly offset: bigint;
  /** The key a record waits on (`key` order; null = no key); undefined in `offset` order. */
  readonly key: string | null | undefined;
  /** The record while it waits to start; dropped once started. */
  record: R | undefined;
  state: 'waiting' | 'inHand' | 'done';
}

/** A record a lane holds: anything with its offset (and, for `key` order, its key bytes). */
export interface LaneRecord {
  readonly offset: bigint;
  readonly key?: Uint8Array | null;
}

/** Latin-1 maps every byte to one char, so equal strings ⇔ equal key bytes. */
const keyOf = (k: Uint8Array | null | undefined): string | null =>
  k === null || k === undefined ? null : Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString('latin1');

/** The reason {@link PartitionLane.revokedSignal} aborts with. */
function revokedReason(lane: { readonly topic: string; readonly partition: number }): Error {
  return Object.assign(new Error(`partition ${lane.topic}/${lane.partition} was revoked from this member (rebalance)`), { code: 'CEG_PARTITION_REVOKED' });
}

/** A binary min-heap of taken records by offset: the records that may start now. */
class ReadyHeap<R> {
  #a: Taken<R>[] = [];

  get size(): number {
    return this.#a.length;
  }

  push(t: Taken<R>): void {
    const a = this.#a;
    let i = a.push(t) - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]!.offset <= t.offset) break;
      a[i] = a[p]!;
      i = p;
    }
    a[i] = t;
  }

  pop(): Taken<R> | undefined {
    const a = this.#a;
    const top = a[0];
    const last = a.pop();
    if (top === undefined || last === undefined || a.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const c = l + 1 < a.length && a[l + 1]!.offset < a[l]!.offset ? l + 1 : l;
      if (a[c]!.offset >= last.offset) break;
      a[i] = a[c]!;
      i = c;
    }
    a[i] = last;
    return top;
  }

  clear(): void {
    this.#a = [];
  }
}

export class PartitionLane<R extends LaneRecord = LaneRecord> {
  readonly topic: string;
  readonly partition: number;
  readonly width: number;
  readonly order: LaneOrder;
  /** Taken records in offset order, from `#head` on (finished ones are dropped from the front). */
  #queue: Taken<R>[] = [];
  #head = 0;
  /** Waiting records that may start now (their key is free). */
  readonly #ready = new ReadyHeap<R>();
  /** `key` order: per busy key (a record of it ready or in hand), the records of that key waiting behind it, in offset order. */
  readonly #behind = new Map<string | null, Taken<R>[]>();
  readonly #inHandAt = new Map<bigint, Taken<R>>();
  #waiting = 0;
  /** Records below this offset were taken already (a fetch after a rejoin may bring them again). */
  #nextToTake: bigint | undefined;
  /** Finished records after a redelivered one: not handled again when they are fetched again. */
  readonly #finishedAhead = new Set<bigint>();
  #redeliver: { readonly offset: bigint; readonly afterMs: number } | undefined;
  #halted = false;
  #revoked = false;
  /** Aborted by {@link revoke}: made on first read (most lanes are never revoked while records wait). */
  #revokedSignal: AbortController | undefined;
  #committed: bigint | undefined;
  /** Whether the adapter paused the partition (too many waiting, or a redelivery wait); the adapter's flag. */
  paused = false;

  /** `width`: records in hand at once (integer ≥ 1; lower values count as 1). `order`: see {@link LaneOrder}; default `offset`. */
  constructor(topic: string, partition: number, width: number, order: LaneOrder = 'offset') {
    this.topic = topic;
    this.partition = partition;
    this.width = Math.max(1, Math.floor(width));
    this.order = order;
  }

  /** true: start nothing more on this partition (a redelivery is pending, the handler failed, or the partition was revoked). */
  get halted(): boolean {
    return this.#halted || this.#revoked;
  }

  get revoked(): boolean {
    return this.#revoked;
  }

  get inHand(): number {
    return this.#inHandAt.size;
  }

  /** Records taken and waiting to start (for a place in the window, or for their key). */
  get waiting(): number {
    return this.#waiting;
  }

  /** What to do with a fetched record: `skip` (taken already), `finished` (finished already: take it as done), or `take`. */
  classify(offset: bigint): 'skip' | 'finished' | 'take' {
    if (this.#finishedAhead.has(offset)) {
      this.#finishedAhead.delete(offset);
      return 'finished';
    }
    if (this.#nextToTake !== undefined && offset < this.#nextToTake) return 'skip';
    return 'take';
  }

  /** Takes a fetched record (offsets rising): it waits for a place in the window and for its key ({@link start}); with `finished`, it is processed already. */
  take(record: R, finished = false): void {
    this.#nextToTake = record.offset + 1n;
    if (finished) {
      this.#queue.push({ offset: record.offset, key: undefined, record: undefined, state: 'done' });
      this.#advance();
      return;
    }
    const key = this.order === 'key' ? keyOf(record.key) : undefined;
    const t: Taken<R> = { offset: record.offset, key, record, state: 'waiting' };
    this.#queue.push(t);
    this.#waiting++;
    if (key === undefined) {
      this.#ready.push(t);
      return;
    }
    const behind = this.#behind.get(key);
    if (behind !== undefined) {
      behind.push(t);
      return;
    }
    this.#behind.set(key, []);
    this.#ready.push(t);
  }

  /** The next record to hand to the handler, when the window has room, the lane runs and a record's key is free; it is in hand from now on. */
  start(): R | undefined {
    if (this.halted || this.#inHandAt.size >= this.width) return undefined;
    const t = this.#ready.pop();
    if (t === undefined) return undefined;
    const r = t.record!;
    t.record = undefined;
    t.state = 'inHand';
    this.#inHandAt.set(t.offset, t);
    this.#waiting--;
    return r;
  }

  /**
   * A record's handling ended. `done`: processed (the next record of its key may start).
   * `redeliver`: not processed, to be handled again after `afterMs` (its key stays held).
   * `stopped`: not processed (handler failed, or the member stops).
   * Returns the redelivery to arrange once nothing is in hand any more (else undefined): the lane
   * then restarts at its lowest unfinished record (`offset`, at or below the redelivered one) —
   * the records waiting are dropped (they are fetched again).
   */
  finish(offset: bigint, o: { readonly kind: 'done' } | { readonly kind: 'redeliver'; readonly afterMs: number } | { readonly kind: 'stopped' }): { readonly offset: bigint; readonly afterMs: number } | undefined {
    const t = this.#inHandAt.get(offset);
    this.#inHandAt.delete(offset);
    if (o.kind === 'done') {
      if (t !== undefined) {
        t.state = 'done';
        this.#release(t.key);
      }
      this.#advance();
    } else if (o.kind === 'redeliver') {
      this.#halted = true;
      if (this.#redeliver === undefined || offset < this.#redeliver.offset) this.#redeliver = { offset, afterMs: o.afterMs };
    } else {
      this.#halted = true;
    }
    if (this.#inHandAt.size > 0 || this.#redeliver === undefined) return undefined;
    // Nothing in hand: restart at the lowest unfinished record; remember what finished after it.
    const restartAt = this.commitOffset()!;
    const afterMs = this.#redeliver.afterMs;
    this.#redeliver = undefined;
    for (let i = this.#head; i < this.#queue.length; i++) if (this.#queue[i]!.state === 'done') this.#finishedAhead.add(this.#queue[i]!.offset);
    this.#queue = [];
    this.#head = 0;
    this.#ready.clear();
    this.#behind.clear();
    this.#waiting = 0;
    this.#nextToTake = restartAt;
    return { offset: restartAt, afterMs };
  }

  /** The partition resumes after a redelivery wait. */
  resume(): void {
    this.#halted = false;
  }

  /**
   * Aborted once the partition left this member ({@link revoke}): what a record in hand hands to
   * its handler (RecordContext.revoked), so that work not started yet — a delivery waiting for a
   * rate token or a handshake — is dropped instead of duplicating the new owner's.
   */
  get revokedSignal(): AbortSignal {
    if (this.#revokedSignal === undefined) {
      this.#revokedSignal = new AbortController();
      // Every record of the lane's window may wait on it at once (a sink's slot, a rate token: up to
      // `concurrency`, 1,000 for batched push), each removing its listener when done: no leak warning.
      setMaxListeners(0, this.#revokedSignal.signal);
    }
    if (this.#revoked && !this.#revokedSignal.signal.aborted) this.#revokedSignal.abort(revokedReason(this));
    return this.#revokedSignal.signal;
  }

  /** The partition left this member (rebalance): nothing more starts, nothing is committed for it; {@link revokedSignal} aborts. */
  revoke(): void {
    this.#revoked = true;
    this.#revokedSignal?.abort(revokedReason(this));
  }

  /** The offset after the last record taken (where the partition's fetch goes on; after a redelivery, the record to come again); undefined when nothing was taken. */
  get next(): bigint | undefined {
    return this.#nextToTake;
  }

  /** The offset to commit now (lowest unfinished, or after the last taken); undefined when nothing was taken. */
  commitOffset(): bigint | undefined {
    if (this.#head < this.#queue.length) return this.#queue[this.#head]!.offset;
    return this.#nextToTake;
  }

  /** The commit offset when it changed since {@link committed} was last called with it. */
  pendingCommit(): bigint | undefined {
    const o = this.commitOffset();
    return o === undefined || o === this.#committed || this.#revoked ? undefined : o;
  }

  committed(offset: bigint): void {
    this.#committed = offset;
  }

  /** A record of `key` finished: the next record of that key (if any) may start. */
  #release(key: string | null | undefined): void {
    if (key === undefined) return;
    const behind = this.#behind.get(key);
    const next = behind?.shift();
    if (next === undefined) this.#behind.delete(key);
    else this.#ready.push(next);
  }

  #advance(): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.state === 'done') this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}
