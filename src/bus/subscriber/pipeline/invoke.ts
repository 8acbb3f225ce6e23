/**
 * Stages 4 and 6: the handler runs inside the event's correlation and trace context (an event
 * published while handling inherits `correlationid`, gets `causationid` = this `id` and continues
 * the trace), and whatever it does becomes an outcome: nothing, `ack` or any value that is not an
 * outcome → handled; a returned outcome as it is (a missing `reason` filled in); a GatewayError with `retriable: false` → dead letter; any other throw → retry.
 * Spec: bus spec M2, T11 (correlation), S5 (outcomes); W3C Trace Context.
 */
import { GatewayError, errorMessage } from '../../../core/errors.js';
import type { Envelope } from '../../../envelope/types.js';
import { runHandling } from '../../correlation/index.js';
import { ack, deadLetter, duplicate, retry } from '../outcome.js';
import type { DeliveryFailure, Outcome } from '../outcome.js';

/**
 * `traceparent`: the trace the handling continues ({@link handlingTraceparent}, resolved once by the caller).
 * `inContext` false: `run` is called outside the correlation context (a sink that never publishes:
 * no AsyncLocalStorage.run, whose promise hooks, once enabled, cost every promise of the process on
 * Node 20); the outcome rules are the same.
 */
export function invokeInContext(event: Envelope, run: () => Outcome | void | Promise<Outcome | void>, traceparent?: string, inContext = true): Promise<Outcome> {
  const a = event.attributes;
  let running: Outcome | void | Promise<Outcome | void>;
  try {
    if (inContext) {
      const correlationid = typeof a.correlationid === 'string' ? a.correlationid : a.id;
      running = runHandling({ correlationid, eventId: a.id, ...(traceparent === undefined ? {} : { traceparent }) }, run);
    } else running = run();
  } catch (err) {
    return Promise.resolve(outcomeOfThrow(err));
  }
  // One promise per call (no async wrapper): this runs once per record. A plain-JS handler may
  // return a value rather than a promise: awaited like one.
  return (isThenable(running) ? running : Promise.resolve(running)).then(orAck, outcomeOfThrow);
}

const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof (v as { then?: unknown } | null | undefined)?.then === 'function';

/**
 * What a handler returned, as an outcome. A plain-JS handler is not held to the types: anything
 * that is not an outcome (nothing, `true`, a query result) counts as handled, as returning nothing
 * does; a `retry` or `deadLetter` without a string `reason` gets one, and an `afterMs` that is not
 * a finite number of ms ≥ 0 is dropped (the policy's delay applies). A malformed outcome stopped
 * the whole subscription before (its `reason` was read as a string).
 */
function orAck(out: unknown): Outcome {
  if (typeof out !== 'object' || out === null) return ack;
  const o = out as { kind?: unknown; reason?: unknown; afterMs?: unknown; failure?: unknown };
  const reason = typeof o.reason === 'string' ? o.reason : `the handler returned ${String(o.kind)} without a reason`;
  const failure = typeof o.failure === 'object' && o.failure !== null ? (o.failure as DeliveryFailure) : undefined;
  switch (o.kind) {
    case 'ack':
      return ack;
    case 'duplicate':
      return duplicate;
    case 'retry':
      if (typeof o.reason === 'string' && (o.afterMs === undefined || validDelay(o.afterMs))) return out as Outcome;
      return retry(reason, validDelay(o.afterMs) ? o.afterMs : undefined, failure);
    case 'deadLetter':
      return typeof o.reason === 'string' ? (out as Outcome) : deadLetter(reason, failure);
    default:
      return ack;
  }
}

const validDelay = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** A thrown handler error as an outcome: a GatewayError with retriable false dead-letters, anything else is retried. */
function outcomeOfThrow(err: unknown): Outcome {
  return err instanceof GatewayError && !err.retriable ? deadLetter(`handler refused: ${errorMessage(err)}`) : retry(errorMessage(err));
}

/** The trace a handling continues (W3C Trace Context): the consumer span's when tracing is on, else the event's own `traceparent`. */
export function handlingTraceparent(event: Envelope, spanTraceparent: string | undefined): string | undefined {
  const t = event.attributes.traceparent;
  return spanTraceparent ?? (typeof t === 'string' ? t : undefined);
}
