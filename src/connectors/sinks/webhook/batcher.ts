/**
 * A micro-batcher: collects the items handed to it at about the same time into batches and sends
 * each batch with one call; every item's promise settles with its batch's result.
 *
 * The consumer pipeline hands a subscription's records to its sink one at a time, each handler
 * awaiting its own outcome, so the events "in hand" at once (at most the subscription's
 * `concurrency`) are what a batch can hold. A batch is sent
 * - at once when it reaches `maxEvents` items or `maxBytes` bytes (an item that would push it past
 *   `maxBytes` first sends the batch so far and starts the next; an item larger than `maxBytes`
 *   by itself goes alone: nothing is refused for its size here),
 * - else `maxDelayMs` after its first item; 0 = on the next turn of the event loop (`setImmediate`),
 *   after the handlers started in this turn and their promise chains have added theirs: what is
 *   at hand.
 * Sizes are counted as the JSON array's bytes: `[`, the items, a `,` between items, `]`.
 * Items keep the order they were added in; batches are sent in the order they were closed, and may
 * be in flight at the same time.
 * Spec: issue 8 (batchpush: "a micro-batcher in the sink collecting concurrently in-hand deliveries").
 */

/** When a batch is closed. */
export interface BatchLimits {
  /** Most items of one batch (≥ 1). */
  readonly maxEvents: number;
  /** Most bytes of one batch's array (≥ 1); a larger single item goes alone. */
  readonly maxBytes: number;
  /** Longest wait after a batch's first item, ms (0 = the next turn of the event loop). */
  readonly maxDelayMs: number;
}

/** Sends one batch; its result (or its rejection) is every item's. Never called with an empty batch. */
export type SendBatch<T, R> = (items: readonly T[]) => Promise<R>;

/** The batch being filled: its items, and the one promise all of them get. */
interface Filling<T, R> {
  readonly items: T[];
  readonly result: Promise<R>;
  readonly resolve: (r: R) => void;
  readonly reject: (e: unknown) => void;
}

function filling<T, R>(): Filling<T, R> {
  let resolve!: (r: R) => void;
  let reject!: (e: unknown) => void;
  const result = new Promise<R>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { items: [], result, resolve, reject };
}

/** Bytes of a JSON array of items of these sizes. */
export const arrayBytes = (itemBytes: number, count: number): number => itemBytes + 2 + Math.max(0, count - 1);

export class MicroBatcher<T, R> {
  #limits: BatchLimits;
  readonly #send: SendBatch<T, R>;
  /** The batch being filled; undefined when nothing is pending. */
  #pending: Filling<T, R> | undefined;
  /** Sum of the pending items' bytes (no brackets or commas). */
  #pendingBytes = 0;
  #timer: { readonly cancel: () => void } | undefined;

  constructor(limits: BatchLimits, send: SendBatch<T, R>) {
    this.#limits = limits;
    this.#send = send;
  }

  /** New limits apply from the next item on (a pending batch is sent by its own timer or when full). */
  setLimits(limits: BatchLimits): void {
    this.#limits = limits;
  }

  /** Items waiting for their batch to be sent. */
  get pending(): number {
    return this.#pending?.items.length ?? 0;
  }

  /**
   * Adds `item` of `bytes` bytes; settles with its batch's result. Every item of a batch gets the
   * same promise (one per batch, not one per item: this runs for every event of a batched push).
   */
  add(item: T, bytes: number): Promise<R> {
    const l = this.#limits;
    if (this.#pending !== undefined && arrayBytes(this.#pendingBytes + bytes, this.#pending.items.length + 1) > l.maxBytes) this.flush();
    const batch = (this.#pending ??= filling<T, R>());
    batch.items.push(item);
    this.#pendingBytes += bytes;
    if (batch.items.length >= l.maxEvents || arrayBytes(this.#pendingBytes, batch.items.length) >= l.maxBytes) this.flush();
    else this.#timer ??= this.#schedule(l.maxDelayMs);
    return batch.result;
  }

  /** Sends what is pending now (no-op when nothing is). */
  flush(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    const batch = this.#pending;
    if (batch === undefined) return;
    this.#pending = undefined;
    this.#pendingBytes = 0;
    let sent: Promise<R>;
    try {
      sent = this.#send(batch.items);
    } catch (err) {
      // A send that throws instead of rejecting still settles every item.
      batch.reject(err);
      return;
    }
    sent.then(batch.resolve, batch.reject);
  }

  #schedule(delayMs: number): { readonly cancel: () => void } {
    if (delayMs <= 0) {
      const h = setImmediate(() => this.#fire());
      return { cancel: () => clearImmediate(h) };
    }
    const h = setTimeout(() => this.#fire(), delayMs);
    return { cancel: () => clearTimeout(h) };
  }

  #fire(): void {
    this.#timer = undefined;
    this.flush();
  }
}
