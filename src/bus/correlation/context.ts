/**
 * The event being handled, carried through async calls (AsyncLocalStorage), so that an event
 * published while handling another inherits its `correlationid` and gets `causationid` = its `id`;
 * an event published outside any handler starts a new chain.
 * Spec: bus spec M2 ("populate correlationId"), T11.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface HandlingContext {
  readonly correlationid: string;
  /** `id` of the event being handled. */
  readonly eventId: string;
  readonly traceparent?: string;
}

const storage = new AsyncLocalStorage<HandlingContext>();

/** Runs `fn` with `ctx` as the event being handled. */
export function runHandling<T>(ctx: HandlingContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/** The event being handled by the caller's async chain, if any. */
export function currentHandling(): HandlingContext | undefined {
  return storage.getStore();
}
