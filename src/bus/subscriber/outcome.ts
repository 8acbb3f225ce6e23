/**
 * The outcomes of a delivery (bus spec S5): handled, retry (transient), dead letter (permanent or
 * poison). A handler may return one, return nothing (= handled), or throw: a GatewayError with
 * `retriable: false` means dead letter, anything else means retry. `duplicate` is "handled
 * before": an idempotent handler acknowledged a redelivery without running (bus spec S4); it
 * counts as handled for the offset and apart in the statistics.
 */

/**
 * What a sink learnt from a failed attempt, carried into the dead letter when the event ends there
 * (`dlq_last_status`, `dlq_response_excerpt`, `dlq_sink`). Never a secret: `sink` is the target
 * without credentials, `excerpt` what the sink itself answered (at most 1 KiB of it).
 */
export interface DeliveryFailure {
  /** The sink's last HTTP status, when it answered. */
  readonly status?: number;
  /** The start of the sink's answer, at most 1,024 bytes of UTF-8. */
  readonly excerpt?: string;
  /** The sink, e.g. `https://partner.example/hook` (no query, no credentials). */
  readonly sink?: string;
}

export type Outcome =
  | { readonly kind: 'ack' }
  | { readonly kind: 'duplicate' }
  | {
      readonly kind: 'retry';
      readonly reason: string;
      /** Wait at least this long before the next attempt, ms (e.g. a sink's Retry-After). */
      readonly afterMs?: number;
      readonly failure?: DeliveryFailure;
    }
  | { readonly kind: 'deadLetter'; readonly reason: string; readonly failure?: DeliveryFailure };

export const ack: Outcome = Object.freeze({ kind: 'ack' });
export const duplicate: Outcome = Object.freeze({ kind: 'duplicate' });
export const retry = (reason: string, afterMs?: number, failure?: DeliveryFailure): Outcome =>
  Object.freeze({ kind: 'retry', reason, ...(afterMs === undefined ? {} : { afterMs }), ...(failure === undefined ? {} : { failure }) });
export const deadLetter = (reason: string, failure?: DeliveryFailure): Outcome => Object.freeze({ kind: 'deadLetter', reason, ...(failure === undefined ? {} : { failure }) });
