/**
 * In-place retries of an ordered subscription: the attempts made on a record that waits, paused,
 * for its next attempt. Kept in memory per record position; bounded (oldest dropped first). A
 * record whose partition moves to another member starts its count again there (documented:
 * at-least-once, the retry budget is per member).
 */
import type { TransportRecord } from '../../../transport/port.js';

const MAX_ENTRIES = 10_000;

export interface Attempts {
  readonly attempt: number;
  readonly firstFailureMs: number;
}

const keyOf = (r: TransportRecord): string => `${r.topic}\u0000${r.partition}\u0000${r.offset}`;

export class AttemptLedger {
  readonly #entries = new Map<string, Attempts>();
  readonly #transient = new Map<string, number>();

  // Nearly every record is handled at its first attempt: with nothing recorded, no key is built
  // (a string per record, twice, in `get` and `forget`).
  get(record: TransportRecord): Attempts | undefined {
    return this.#entries.size === 0 ? undefined : this.#entries.get(keyOf(record));
  }

  failed(record: TransportRecord, attempt: number, firstFailureMs: number): void {
    this.#bounded(this.#entries).set(keyOf(record), { attempt, firstFailureMs });
  }

  /** Counts a transient failure before the handler (registry unreachable); returns the count. */
  transientFailure(record: TransportRecord): number {
    const k = keyOf(record);
    const n = (this.#transient.get(k) ?? 0) + 1;
    this.#bounded(this.#transient).set(k, n);
    return n;
  }

  forget(record: TransportRecord): void {
    if (this.#entries.size === 0 && this.#transient.size === 0) return;
    const k = keyOf(record);
    this.#entries.delete(k);
    this.#transient.delete(k);
  }

  #bounded<V>(m: Map<string, V>): Map<string, V> {
    if (m.size >= MAX_ENTRIES) {
      const oldest = m.keys().next();
      if (oldest.done !== true) m.delete(oldest.value);
    }
    return m;
  }
}
