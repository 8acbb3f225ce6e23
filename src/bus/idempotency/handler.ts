/**
 * `idempotent(store, handler, { windowMs })`: a subscription handler that drops redeliveries of an
 * event already finished, by `source`+`id` (bus spec S4), on top of at-least-once delivery (S3).
 */
import { errorMessage } from '../../core/errors.js';
import type { Envelope } from '../../envelope/types.js';
import type { DeliveryContext, Outcome } from '../subscriber/index.js';
import { duplicate } from '../subscriber/index.js';
import type { IdempotencyKey, IdempotencyStore } from './port.js';
import { assertWindowMs, keyString } from './port.js';

export interface IdempotentOptions {
  /** How long a finished event is remembered, ms (integer ≥ 1). Redeliveries later than this run again. */
  readonly windowMs: number;
  /** Separates consumers sharing one store; default the subscription name (`ctx.subscription`). */
  readonly scope?: string;
  /** Called (synchronously) for each delivery dropped as a duplicate, e.g. to log it. */
  readonly onSkip?: (event: Envelope, ctx: DeliveryContext) => void;
  /**
   * Called when recording a handled event failed (the store was unreachable). The delivery still
   * counts as handled: only a later redelivery of it could run the handler again.
   */
  readonly onMarkError?: (err: unknown, event: Envelope, ctx: DeliveryContext) => void;
}

export interface IdempotentStats {
  /** Deliveries the wrapped handler finished as handled (and that were recorded, or tried to be). */
  readonly handled: number;
  /** Deliveries dropped because their source+id was already done. */
  readonly skipped: number;
  /** Handled deliveries whose record in the store failed (see onMarkError). */
  readonly markFailed: number;
}

/** A subscription handler with its counters. */
export type IdempotentHandler<H> = H & { stats(): IdempotentStats };

/** The key of a delivery: scope (option or subscription), `source`, `id`. */
export function deliveryKey(event: Envelope, ctx: DeliveryContext, scope?: string): IdempotencyKey {
  return { scope: scope ?? ctx.subscription, source: event.attributes.source, id: event.attributes.id };
}

/** True when a handler result is the final outcome "handled" (nothing returned, or `ack`). */
export function isHandled(out: Outcome | void): boolean {
  return out === undefined || out.kind === 'ack' || out.kind === 'duplicate';
}

/**
 * Wraps a handler so an event whose `source`+`id` is already done in `store` (within `windowMs`)
 * is acknowledged without running the handler again (counted in `stats().skipped`). Otherwise the
 * handler runs, and only when it finished as handled (resolved with nothing or `ack`) is the event
 * recorded as done. A `retry`, a `deadLetter` or a throw records nothing and is passed on
 * unchanged: the runner decides, and a record that still has to run is never dropped. (A runner
 * that records dead letters calls `store.markDone(key, 'dead-lettered', …)` after the dead-letter
 * record is durable.) Deliveries of one key in this process run one at a time.
 *
 * Guarantee: the handler's effect happens once per delivery that reaches it; a crash between the
 * handler's end and the record can still run it twice. For "exactly once" of a PostgreSQL effect,
 * use {@link idempotentPg}, which commits the effect and the record in one transaction.
 *
 * Typing: `E` is the event the subscription hands over (`EventOf<K>` for generated kinds), so the
 * wrapped handler sees the kind's generated data type.
 *
 * Errors: CEG_INVALID_OPTIONS (retriable: false) for a bad windowMs, at wrap time. A failing
 * `lookup` rejects the delivery (the runner retries it: never run unchecked); a failing `markDone`
 * after a handled event is counted and reported through onMarkError, not thrown.
 * Spec: bus spec S4 (idempotent consumers, source+id), S3 (at-least-once), S5 (final outcomes).
 */
export function idempotent<E extends Envelope = Envelope>(
  store: IdempotencyStore,
  handler: (event: E, ctx: DeliveryContext) => Outcome | void | Promise<Outcome | void>,
  options: IdempotentOptions,
): IdempotentHandler<(event: E, ctx: DeliveryContext) => Promise<Outcome | void>> {
  assertWindowMs(options.windowMs);
  const stats = { handled: 0, skipped: 0, markFailed: 0 };
  const inFlight = new Map<string, Promise<unknown>>();

  async function deliver(event: E, ctx: DeliveryContext, key: IdempotencyKey): Promise<Outcome | void> {
    if ((await store.lookup(key)) !== undefined) {
      stats.skipped++;
      options.onSkip?.(event, ctx);
      return duplicate; // the runner counts it apart from handled events
    }
    const out = await handler(event, ctx);
    if (!isHandled(out)) return out;
    stats.handled++;
    try {
      await store.markDone(key, 'handled', options.windowMs);
    } catch (err) {
      stats.markFailed++;
      if (options.onMarkError) options.onMarkError(err, event, ctx);
      else process.emitWarning(`idempotency: recording ${keyString(key)} failed: ${errorMessage(err)}`);
    }
    return out;
  }

  const wrapped = async (event: E, ctx: DeliveryContext): Promise<Outcome | void> => {
    const key = deliveryKey(event, ctx, options.scope);
    const k = keyString(key);
    // A second delivery of a key already running here waits for it, then checks the store again.
    for (let running = inFlight.get(k); running !== undefined; running = inFlight.get(k)) await running.catch(() => undefined);
    const p = deliver(event, ctx, key);
    inFlight.set(k, p);
    try {
      return await p;
    } finally {
      inFlight.delete(k);
    }
  };
  return Object.assign(wrapped, { stats: (): IdempotentStats => ({ ...stats }) });
}
