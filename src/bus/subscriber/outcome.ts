/**
 * The outcomes of a delivery (bus spec S5): handled, retry (transient), dead letter (permanent or
 * poison). A handler may return one, return nothing (= handled), or throw: a GatewayError with
 * `retriable: false` means dead letter, anything else means retry. `duplicate` is "handled
 * before": an idempotent handler acknowledged a redelivery without running (bus spec S4); it
 * counts as handled for the offset and apart in the statistics.
 */
export type Outcome =
  | { readonly kind: 'ack' }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'retry'; readonly reason: string; /** Wait at least this long before the next attempt, ms (e.g. a sink's Retry-After). */ readonly afterMs?: number }
  | { readonly kind: 'deadLetter'; readonly reason: string };

export const ack: Outcome = Object.freeze({ kind: 'ack' });
export const duplicate: Outcome = Object.freeze({ kind: 'duplicate' });
export const retry = (reason: string, afterMs?: number): Outcome => Object.freeze(afterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', reason, afterMs });
export const deadLetter = (reason: string): Outcome => Object.freeze({ kind: 'deadLetter', reason });
