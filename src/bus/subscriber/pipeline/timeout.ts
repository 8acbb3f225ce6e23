/**
 * A bound on one handler call. A handler that never returns used to hold up every partition of its
 * consumer (kafkajs fetches again only once every partition's batch is done; issue 7 trial). After
 * `timeoutMs` the call's signal is aborted and the outcome is a retry; the call itself cannot be
 * cancelled, so work it still does after that may happen twice (at-least-once, bus spec S3).
 */
import { GatewayError } from '../../../core/errors.js';
import { retry } from '../outcome.js';
import type { Outcome } from '../outcome.js';

/**
 * Runs `run` with a signal aborted at the timeout or when `stop` aborts; resolves with its outcome,
 * or with `retry` at the timeout. Never rejects when `run` does not.
 */
export async function withHandlerTimeout(timeoutMs: number, stop: AbortSignal, run: (signal: AbortSignal) => Promise<Outcome>): Promise<Outcome> {
  if (!Number.isFinite(timeoutMs)) return run(stop); // sinks that bound each call themselves
  const call = new AbortController();
  const onStop = (): void => call.abort(stop.reason);
  stop.addEventListener('abort', onStop, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => {
      call.abort(new GatewayError('CEG_DELIVERY_TIMEOUT', `handler did not finish within ${timeoutMs} ms`, { retriable: true }));
      resolve(retry(`handler did not finish within ${timeoutMs} ms (handlerTimeoutMs)`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([run(call.signal), timedOut]);
  } finally {
    clearTimeout(timer);
    stop.removeEventListener('abort', onStop);
  }
}
