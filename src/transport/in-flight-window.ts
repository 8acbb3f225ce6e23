/**
 * A per-partition lane (one `PartitionLane` per partition a member holds): fetched records are
 * taken into it and the fetch loop goes on, so one partition's slow records never hold up the
 * next fetch of the others; up to `width` records of the partition are in its handler at once,
 * started in offset order, finished in any order (width 1: strictly one after the other, what
 * per-key order needs). With a width above 1 a slow record holds up only itself, never the records
 * fetched after it. The offset to commit is the lowest record not finished yet (or, with nothing
 * in hand, the one after the last taken), so a commit never passes an unfinished record
 * (at-least-once, bus spec S3) however the handlers' finishing order falls. Offsets need not be
 * contiguous (compaction, transaction markers): the lane keeps the taken offsets in order.
 * - `redeliver` of a record: nothing new starts on the partition; once the records in hand are
 *   finished the lane restarts at the redelivered record (`restartAt`). Records after it that
 *   finished meanwhile are remembered and not handled again when they are fetched again.
 * Adapter-neutral: it sees offsets and decisions, never a client.
 * Spec: issue 8 ("ordering none: a per-partition in-flight window … commits only up to the lowest
 *   unfinished offset").
 */

interface Taken<R> {
  readonly offset: bigint;
  /** The record while it waits to start; dropped once started. */
  record: R | undefined;
  state: 'waiting' | 'inHand' | 'done';
}

/** A record a lane holds: anything with its offset. */
export interface LaneRecord {
  readonly offset: bigint;
}

export class PartitionLane<R extends LaneRecord = LaneRecord> {
  readonly topic: string;
  readonly partition: number;
  readonly width: number;
  /** Taken records in offset order, from `#head` on (finished ones are dropped from the front). */
  #queue: Taken<R>[] = [];
  #head = 0;
  /** Index in `#queue` of the next record to start (waiting records are a suffix of the queue). */
  #nextStart = 0;
  #inHand = 0;
  /** Records below this offset were taken already (a fetch after a rejoin may bring them again). */
  #nextToTake: bigint | undefined;
  /** Finished records after a redelivered one: not handled again when fetched again. */
  readonly #finishedAhead = new Set<bigint>();
  #redeliver: { readonly offset: bigint; readonly afterMs: number } | undefined;
  #halted = false;
  #revoked = false;
  #committed: bigint | undefined;
  /** Whether the adapter paused the partition (too many waiting, or a redelivery wait); the adapter's flag. */
  paused = false;

  constructor(topic: string, partition: number, width: number) {
    this.topic = topic;
    this.partition = partition;
    this.width = Math.max(1, Math.floor(width));
  }

  /** true: start nothing more on this partition (a redelivery is pending, the handler failed, or the partition was revoked). */
  get halted(): boolean {
    return this.#halted || this.#revoked;
  }

  get revoked(): boolean {
    return this.#revoked;
  }

  get inHand(): number {
    return this.#inHand;
  }

  /** Records taken and waiting for a free place in the window. */
  get waiting(): number {
    return this.#queue.length - this.#nextStart;
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

  /** Takes a fetched record: it waits for a place in the window ({@link start}); with `finished`, it is processed already. */
  take(record: R, finished = false): void {
    this.#queue.push({ offset: record.offset, record: finished ? undefined : record, state: finished ? 'done' : 'waiting' });
    this.#nextToTake = record.offset + 1n;
    if (finished && this.#nextStart === this.#queue.length - 1) this.#nextStart++;
    this.#advance();
  }

  /** The next record to hand to the handler, when the window has room and the lane runs; it is in hand from now on. */
  start(): R | undefined {
    while (this.#nextStart < this.#queue.length && this.#queue[this.#nextStart]!.state === 'done') this.#nextStart++;
    if (this.halted || this.#inHand >= this.width || this.#nextStart >= this.#queue.length) return undefined;
    const t = this.#queue[this.#nextStart++]!;
    const r = t.record!;
    t.record = undefined;
    t.state = 'inHand';
    this.#inHand++;
    return r;
  }

  /**
   * A record's handling ended. `done`: processed. `redeliver`: not processed, to be handled again
   * after `afterMs`. `stopped`: not processed (handler failed, or the member stops).
   * Returns the redelivery to arrange once nothing is in hand any more (else undefined): the lane
   * then restarts at that record — the records waiting are dropped (they are fetched again).
   */
  finish(offset: bigint, o: { readonly kind: 'done' } | { readonly kind: 'redeliver'; readonly afterMs: number } | { readonly kind: 'stopped' }): { readonly offset: bigint; readonly afterMs: number } | undefined {
    this.#inHand--;
    if (o.kind === 'done') {
      const t = this.#find(offset);
      if (t !== undefined) t.state = 'done';
      this.#advance();
    } else if (o.kind === 'redeliver') {
      this.#halted = true;
      if (this.#redeliver === undefined || offset < this.#redeliver.offset) this.#redeliver = { offset, afterMs: o.afterMs };
    } else {
      this.#halted = true;
    }
    if (this.#inHand > 0 || this.#redeliver === undefined) return undefined;
    // Nothing in hand: restart at the redelivered record; remember what finished after it.
    const r = this.#redeliver;
    this.#redeliver = undefined;
    const kept: Taken<R>[] = [];
    for (let i = this.#head; i < this.#queue.length; i++) {
      const t = this.#queue[i]!;
      if (t.offset < r.offset) kept.push(t);
      else if (t.state === 'done') this.#finishedAhead.add(t.offset);
    }
    this.#queue = kept;
    this.#head = 0;
    this.#nextStart = kept.length;
    this.#nextToTake = r.offset;
    return r;
  }

  /** The partition resumes after a redelivery wait. */
  resume(): void {
    this.#halted = false;
  }

  /** The partition left this member (rebalance): nothing more starts, nothing is committed for it. */
  revoke(): void {
    this.#revoked = true;
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

  #find(offset: bigint): Taken<R> | undefined {
    for (let i = this.#head; i < this.#nextStart; i++) if (this.#queue[i]!.offset === offset) return this.#queue[i];
    return undefined;
  }

  #advance(): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.state === 'done') this.#head++;
    if (this.#nextStart < this.#head) this.#nextStart = this.#head;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#nextStart -= this.#head;
      this.#head = 0;
    }
  }
}
