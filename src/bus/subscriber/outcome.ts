/**
 * The three outcomes of a delivery (bus spec S5): handled, retry (transient), dead letter
 * (permanent or poison). A handler may return one, return nothing (= handled), or throw: a
 * GatewayError with `retriable: false` means dead letter, anything else means retry.
 */
export type Outcome =
  | { readonly kind: 'ack' }
  | { readonly kind: 'retry'; readonly reason: string }
  | { readonly kind: 'deadLetter'; readonly reason: string };

export const ack: Outcome = Object.freeze({ kind: 'ack' });
export const retry = (reason: string): Outcome => Object.freeze({ kind: 'retry', reason });
export const deadLetter = (reason: string): Outcome => Object.freeze({ kind: 'deadLetter', reason });
