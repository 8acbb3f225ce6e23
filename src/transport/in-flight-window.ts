/**
 * A per-partition in-flight window (one `PartitionLane` per partition a member holds): up to
 * `width` records of the partition are in its handler at once, started in offset order, finished in
 * any order. The window spans fetches — a record is taken out of its batch and the batch returns
 * while the record is still in hand — so a slow record holds up only itself, never the records
 * fetched after it. The offset to commit is the lowest record not finished yet (or, with nothing
 * in hand, the one after the last taken), so a commit never passes an unfinished record
 * (at-least-once, bus spec S3) however the handlers' finishing order falls. Offsets need not be
 * contiguous (compaction, transaction markers): the lane keeps the taken offsets in order.
 * - `redeliver` of a record: nothing new starts on the partition; once the records in hand are
 *   finished the lane restarts at the redelivered record (`restartAt`). Records after it that
 *   finished meanwhile are remembered and not handled again when they are fetched again.
 * - Width 1: strictly one record after the other (a retry topic's partitions).
 * Adapter-neutral: it sees offsets and decisions, never a client.
 * Spec: issue 8 ("ordering none: a per-partition in-flight window … commits only up to the lowest
 *   unfinished offset").
 */

interface Taken {
  readonly offset: bigint;
  done: boolean;
}

export class PartitionLane {
  readonly topic: string;
  readonly partition: number;
  readonly width: number;
  /** Taken records in offset order, from `#head` on (finished ones are dropped from the front). */
  #queue: Taken[] = [];
  #head = 0;
  #inHand = 0;
  /** Records below this offset were taken already (a fetch after a rejoin may bring them again). */
  #nextToTake: bigint | undefined;
  /** Finished records after a redelivered one: not handled again when fetched again. */
  readonly #finishedAhead = new Set<bigint>();
  #redeliver: { readonly offset: bigint; readonly afterMs: number } | undefined;
  #halted = false;
  #revoked = false;
  #committed: bigint | undefined;
  readonly #slotWaiters: (() => void)[] = [];

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

  /** What to do with a fetched record: `skip` (taken already, or finished already: mark it processed), or `take`. */
  classify(offset: bigint): 'skip' | 'finished' | 'take' {
    if (this.#finishedAhead.has(offset)) {
      this.#finishedAhead.delete(offset);
      return 'finished';
    }
    if (this.#nextToTake !== undefined && offset < this.#nextToTake) return 'skip';
    return 'take';
  }

  /** Resolves once fewer than `width` records are in hand, or the lane halted. */
  async slot(): Promise<void> {
    while (this.#inHand >= this.width && !this.halted) await new Promise<void>((r) => this.#slotWaiters.push(r));
  }

  /** Marks `offset` taken (in hand); or, with `finished`, already processed. */
  take(offset: bigint, finished = false): void {
    this.#queue.push({ offset, done: finished });
    this.#nextToTake = offset + 1n;
    if (!finished) this.#inHand++;
    this.#advance();
  }

  /**
   * A record's handling ended. `done`: processed. `redeliver`: not processed, to be handled again
   * after `afterMs`. `stopped`: not processed (handler failed, or the member stops).
   * Returns the redelivery to arrange once nothing is in hand any more (else undefined).
   */
  finish(offset: bigint, o: { readonly kind: 'done' } | { readonly kind: 'redeliver'; readonly afterMs: number } | { readonly kind: 'stopped' }): { readonly offset: bigint; readonly afterMs: number } | undefined {
    this.#inHand--;
    if (o.kind === 'done') {
      const t = this.#find(offset);
      if (t !== undefined) t.done = true;
      this.#advance();
    } else if (o.kind === 'redeliver') {
      this.#halted = true;
      if (this.#redeliver === undefined || offset < this.#redeliver.offset) this.#redeliver = { offset, afterMs: o.afterMs };
    } else {
      this.#halted = true;
    }
    this.#wake();
    if (this.#inHand > 0 || this.#redeliver === undefined) return undefined;
    // Nothing in hand: restart at the redelivered record; remember what finished after it.
    const r = this.#redeliver;
    this.#redeliver = undefined;
    const kept: Taken[] = [];
    for (let i = this.#head; i < this.#queue.length; i++) {
      const t = this.#queue[i]!;
      if (t.offset < r.offset) kept.push(t);
      else if (t.done) this.#finishedAhead.add(t.offset);
    }
    this.#queue = kept;
    this.#head = 0;
    this.#nextToTake = r.offset;
    return r;
  }

  /** The partition resumes after a redelivery wait. */
  resume(): void {
    this.#halted = false;
    this.#wake();
  }

  /** The partition left this member (rebalance): nothing more starts, nothing is committed for it. */
  revoke(): void {
    this.#revoked = true;
    this.#wake();
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

  #find(offset: bigint): Taken | undefined {
    for (let i = this.#head; i < this.#queue.length; i++) if (this.#queue[i]!.offset === offset) return this.#queue[i];
    return undefined;
  }

  #advance(): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.done) this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  #wake(): void {
    for (const w of this.#slotWaiters.splice(0)) w();
  }
}
