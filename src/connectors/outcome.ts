/**
 * The three outcomes a sink reports, mapped onto the subscriber contract
 * (src/bus/subscriber): a handler returns nothing (handled), `retry(reason)` (retried with the
 * subscription's backoff, dead-lettered when the retry budget is spent) or `deadLetter(reason)`
 * (dead-lettered at once with `reason` as `dlq_reason`). A thrown GatewayError with
 * `retriable: false` also dead-letters ("handler refused: …"); any other throw is retried.
 * Spec: bus spec S5 ("handled, retry, dead letter"), "Migration Path" (shell hooks become a
 * subscriber adapter with delivery guarantees).
 */
import { deadLetter, retry } from '../bus/subscriber/index.js';
import type { Outcome } from '../bus/subscriber/index.js';
import { GatewayError } from '../core/errors.js';

/** What a sink decided for one event. */
export type SinkOutcome = 'handled' | 'retry' | 'deadLetter';

export const sinkOutcomes: readonly SinkOutcome[] = Object.freeze(['handled', 'retry', 'deadLetter']);

/** The subscriber outcome a handler returns: undefined (handled), `retry(reason)` or `deadLetter(reason)`. */
export function toOutcome(outcome: SinkOutcome, reason: string): Outcome | undefined {
  switch (outcome) {
    case 'handled':
      return undefined;
    case 'retry':
      return retry(reason);
    case 'deadLetter':
      return deadLetter(reason);
    default: {
      const never: never = outcome;
      return never;
    }
  }
}

/**
 * Refuses an event for good from code that cannot return an outcome.
 * Throws: GatewayError CEG_SINK_FAILED, retriable false (the subscriber dead-letters it), with
 *   `details` (e.g. `{ attribute }`).
 */
export function refuse(message: string, details: Record<string, unknown> = {}): never {
  throw new GatewayError('CEG_SINK_FAILED', message, { retriable: false, details });
}
