/**
 * A bounded FIFO ring buffer. `offer` never blocks: a full queue refuses at once and the caller
 * counts the refusal (bus spec P2: bounded buffer, no silent loss).
 */
export class OutboundQueue<T> {
  readonly #ring: (T | undefined)[];
  #head = 0;
  #size = 0;

  constructor(capacity: number) {
    this.#ring = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.#size;
  }

  get capacity(): number {
    return this.#ring.length;
  }

  /** false = full, nothing was added. */
  offer(item: T): boolean {
    if (this.#size === this.#ring.length) return false;
    this.#ring[(this.#head + this.#size) % this.#ring.length] = item;
    this.#size++;
    return true;
  }

  /** Room for `n` more items? (A batch is admitted whole or not at all.) */
  hasRoomFor(n: number): boolean {
    return this.#ring.length - this.#size >= n;
  }

  /** Removes and returns up to `max` items, oldest first. */
  takeUpTo(max: number): T[] {
    const n = Math.min(max, this.#size);
    const out: T[] = new Array<T>(n);
    for (let i = 0; i < n; i++) {
      out[i] = this.#ring[this.#head] as T;
      this.#ring[this.#head] = undefined;
      this.#head = (this.#head + 1) % this.#ring.length;
    }
    this.#size -= n;
    return out;
  }
}
