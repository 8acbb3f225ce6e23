/**
 * Stage 5 (optional): drop redeliveries of an event whose final outcome is already recorded, by
 * `source`+`id` (bus spec S4), and record the final outcome — handled *or* dead-lettered — once it
 * is durable. Because the runner records dead letters too, a crash between the dead-letter produce
 * and the offset commit does not dead-letter the event twice.
 */
import type { Envelope } from '../../../envelope/types.js';
import type { FinalOutcome, IdempotencyKey, IdempotencyStore } from '../../idempotency/port.js';

/** Where a subscription records final outcomes. */
export interface IdempotencyOptions {
  readonly store: IdempotencyStore;
  /** How long a final outcome is remembered, ms. */
  readonly windowMs: number;
  /** Separates consumers sharing one store; default the subscription name. */
  readonly scope?: string;
}

export interface IdempotencyStage {
  /** The recorded outcome of an earlier delivery of this event, if any. Errors: the store's (the record is retried). */
  seen(event: Envelope): Promise<FinalOutcome | undefined>;
  /** Records the final outcome; a failure is reported, never thrown (the outcome stands). */
  record(event: Envelope, outcome: FinalOutcome): Promise<void>;
}

export function idempotencyStage(o: IdempotencyOptions, subscription: string, onRecordError: (err: unknown, event: Envelope) => void): IdempotencyStage {
  const key = (e: Envelope): IdempotencyKey => ({ scope: o.scope ?? subscription, source: e.attributes.source, id: e.attributes.id });
  return {
    seen: (e) => o.store.lookup(key(e)),
    async record(e, outcome) {
      try {
        await o.store.markDone(key(e), outcome, o.windowMs);
      } catch (err) {
        onRecordError(err, e);
      }
    },
  };
}
