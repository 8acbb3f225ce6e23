/**
 * A per-caller cap on concurrent pulls (defect E7; OWASP API4:2023, unrestricted resource
 * consumption): a long-poll or an SSE stream holds one of its caller's slots for its whole life —
 * idle waits between poll rounds included, so a stream that only polls end offsets still counts —
 * and gives it back when its response closes for any reason (answered, client gone, failure,
 * server closing). Without it one partner could hold every HTTP connection of the instance
 * (`HTTP_MAX_CONNECTIONS`) with streams, and the other partners' requests and the health probes
 * got no answer. Counted per instance (per worker process), as the connection limit is.
 * Spec: RFC 6585 §4 (429); RFC 9110 §10.2.3 (Retry-After).
 */
import type { ServerResponse } from 'node:http';
import { GatewayError } from '../../../core/errors.js';

/** The setting that sets the cap (named in the 429's detail so an operator knows what to raise). */
export const PULL_SLOTS_SETTING = 'PULL_MAX_CONCURRENT_PER_PARTNER';
/** Default cap per caller: a partner splitting a subscription over 32 partitions still gets one stream each. */
export const DEFAULT_PULL_SLOTS = 32;
/**
 * `Retry-After` of the 429, seconds. No slot has a known end (a stream may run for hours), so this
 * is a pace for retries rather than a promise: a waiting long-poll frees its slot within 30 s.
 */
export const PULL_SLOTS_RETRY_AFTER_S = 5;

/** Slots per caller; a caller without one in use has no entry, so the map never outgrows the open pulls. */
export class PullSlots {
  readonly max: number;
  readonly #held = new Map<string, number>();

  /** `max`: slots per caller, a whole number ≥ 1. Errors: RangeError otherwise (a wiring mistake, not a request's). */
  constructor(max: number = DEFAULT_PULL_SLOTS) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`${PULL_SLOTS_SETTING}: a whole number ≥ 1, not ${String(max)}`);
    this.max = max;
  }

  /** Slots `caller` holds now (0 when none). */
  held(caller: string): number {
    return this.#held.get(caller) ?? 0;
  }

  /**
   * Takes one of `caller`'s slots until `res` closes ('close' is emitted once, after the answer is
   * complete or the connection is gone, whichever comes first). A response already closed takes
   * none: its 'close' has passed and would never give the slot back.
   * Errors: CEG_RATE_LIMITED (retriable: a 429 with `Retry-After`) when `caller` holds all of its
   *   slots; `details`: `limit` (`concurrentPulls`), `max`, `setting`, `retryAfterS`.
   */
  take(caller: string, res: ServerResponse): void {
    if (res.closed) return;
    const n = this.held(caller);
    if (n >= this.max) {
      throw new GatewayError(
        'CEG_RATE_LIMITED',
        `partner ${caller} already has ${this.max} pulls and streams open on this instance (${PULL_SLOTS_SETTING}); close one or retry in ${PULL_SLOTS_RETRY_AFTER_S} s`,
        { retriable: true, details: { limit: 'concurrentPulls', max: this.max, setting: PULL_SLOTS_SETTING, retryAfterS: PULL_SLOTS_RETRY_AFTER_S } },
      );
    }
    this.#held.set(caller, n + 1);
    // 'close' comes exactly once per response and `once` listens once: one give-back per take,
    // so a count can neither leak nor go below zero.
    res.once('close', () => {
      const left = this.held(caller) - 1;
      if (left > 0) this.#held.set(caller, left);
      else this.#held.delete(caller);
    });
  }
}
