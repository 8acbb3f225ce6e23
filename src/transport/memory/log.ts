import type { TransportRecord } from '../port.js';

/**
 * One partition's append-only log. Offsets start at 0 and are never reused; records are frozen.
 * Waiters are woken on a later macrotask, so no consumer runs inside `append`.
 */
export class PartitionLog {
  readonly #records: TransportRecord[] = [];
  #waiters: (() => void)[] = [];
  #wakeScheduled = false;

  /** Offset the next record will get. */
  get end(): bigint {
    return BigInt(this.#records.length);
  }

  append(record: TransportRecord): void {
    this.#records.push(record);
    if (this.#waiters.length > 0 && !this.#wakeScheduled) {
      this.#wakeScheduled = true;
      setImmediate(() => {
        this.#wakeScheduled = false;
        const waiters = this.#waiters;
        this.#waiters = [];
        for (const w of waiters) w();
      });
    }
  }

  /** The record at `offset`, or undefined at or past the end. */
  at(offset: bigint): TransportRecord | undefined {
    return offset < 0n ? undefined : this.#records[Number(offset)];
  }

  /** First offset whose timestamp is ≥ `timestampMs`, else the end offset (Kafka ListOffsets by time). */
  offsetForTime(timestampMs: number): bigint {
    const i = this.#records.findIndex((r) => r.timestampMs >= timestampMs);
    return i === -1 ? this.end : BigInt(i);
  }

  /** Registers a one-shot wake-up for the next append; returns a function that cancels it. */
  onAppend(wake: () => void): () => void {
    this.#waiters.push(wake);
    return () => {
      this.#waiters = this.#waiters.filter((w) => w !== wake);
    };
  }
}
