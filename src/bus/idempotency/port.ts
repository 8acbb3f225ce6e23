/**
 * The idempotency store port (bus spec S4): remembers which events a consumer has finished, by
 * `source`+`id`, for a bounded window, so a redelivered record (at-least-once, S3) can be dropped.
 * Two adapters implement it: memory (bounded LRU with expiry) and PostgreSQL (expiry by time,
 * survives restarts). One contract suite (test/contract/idempotency.contract.ts) runs against both.
 *
 * Rule of use: record an event as done only after its FINAL outcome — handled, or durably
 * dead-lettered — never after a retry decision, so a record that still has to run is never dropped.
 */
import { GatewayError } from '../../core/errors.js';

/**
 * What identifies one finished event. `scope` separates consumers sharing one store (default in
 * the helpers: the subscription name), so one subscription's "done" never hides the event from
 * another. CloudEvents makes `source`+`id` unique per event (CloudEvents 1.0.2 §3.1.1 `id`).
 */
export interface IdempotencyKey {
  readonly scope: string;
  readonly source: string;
  readonly id: string;
}

/** The final outcomes a delivery can end in (bus spec S5); `retry` is never final. */
export type FinalOutcome = 'handled' | 'dead-lettered';

export interface IdempotencyStore {
  readonly kind: 'memory' | 'pg';
  /**
   * The final outcome recorded for the key, or undefined when it was never recorded, has expired
   * or (memory) was evicted. Errors: the adapter's store failure (see the adapter).
   */
  lookup(key: IdempotencyKey): Promise<FinalOutcome | undefined>;
  /**
   * Records the key as done with its outcome for `windowMs` from now (ms, integer ≥ 1). Recording
   * a key again overwrites the outcome and restarts its window. Concurrent calls for one key are safe.
   * Errors: CEG_INVALID_OPTIONS (retriable: false) for a bad windowMs; the adapter's store failure.
   * Spec: bus spec S4 (drop redeliveries by source+id, bounded window).
   */
  markDone(key: IdempotencyKey, outcome: FinalOutcome, windowMs: number): Promise<void>;
  /** Deletes every expired entry now; resolves with how many were deleted. */
  purgeExpired(): Promise<number>;
  /** Stops the periodic cleanup and releases what the store owns. Idempotent. */
  close(): Promise<void>;
}

/** Largest accepted window: 10 years in ms (anything longer is a unit mistake). */
export const MAX_WINDOW_MS = 10 * 365 * 24 * 3600_000;

/**
 * Checks a window length. Errors: CEG_INVALID_OPTIONS (retriable: false), details `{ field }`.
 */
export function assertWindowMs(windowMs: number, field = 'windowMs'): void {
  if (!Number.isSafeInteger(windowMs) || windowMs < 1 || windowMs > MAX_WINDOW_MS) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `${field}: an integer number of milliseconds in [1, ${MAX_WINDOW_MS}], got ${String(windowMs)}`, {
      retriable: false,
      details: { field },
    });
  }
}

/** A collision-free string form of a key (no separator can be forged by a crafted source or id). */
export function keyString(key: IdempotencyKey): string {
  return JSON.stringify([key.scope, key.source, key.id]);
}
