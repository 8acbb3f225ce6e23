/**
 * A bound on one handler call. A handler that never returns used to hold up every partition of its
 * consumer (kafkajs fetches again only once every partition's batch is done; issue 7 trial). After
 * `timeoutMs` the call's signal is aborted and the outcome is a retry; the call itself cannot be
 * cancelled, so work it still does after that may happen twice (at-least-once, bus spec S3).
 *
 * Cost per record: the call's AbortSignal is made only when the handler reads it ({@link CallSignal}):
 * an AbortController per record, with a listener on the subscription's stop signal, was the largest
 * single cost of a no-op handler's pipeline (issue 8, consumer pipeline profile in BENCHMARKS.md).
 */
import { onAbort } from '../../../core/abort-fanout.js';
import { GatewayError, errorMessage } from '../../../core/errors.js';
import { retry } from '../outcome.js';
import type { Outcome } from '../outcome.js';

/** What a handler call sees of its abort signal: read `signal` only when needed. */
export interface CallSignal {
  /** Aborted at the call's timeout or when the subscription stops. */
  readonly signal: AbortSignal;
}

/**
 * One call's signal, made on first read: aborted with the stop signal's reason once `stop` aborts
 * (or at once, when it already has), or with the timeout's reason at {@link abort}.
 */
class LazyCallSignal implements CallSignal {
  readonly #stop: AbortSignal;
  #controller: AbortController | undefined;
  #reason: unknown;
  #aborted = false;
  #unwatch: (() => void) | undefined;

  constructor(stop: AbortSignal) {
    this.#stop = stop;
  }

  get signal(): AbortSignal {
    if (this.#controller !== undefined) return this.#controller.signal;
    const c = new AbortController();
    this.#controller = c;
    // One listener on the subscription's shared stop signal for every call (core/abort-fanout).
    if (this.#aborted) c.abort(this.#reason);
    else this.#unwatch = onAbort(this.#stop, (reason) => c.abort(reason));
    return c.signal;
  }

  abort(reason: unknown): void {
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  /** The call ended: stop listening to the subscription's stop signal. */
  dispose(): void {
    this.#unwatch?.();
  }
}

/**
 * Runs `run` with a signal aborted at the timeout or when `stop` aborts; resolves with its outcome,
 * or with `retry` at the timeout. Never rejects when `run` does not. `timeoutMs` not finite: no
 * bound (sinks that bound each call themselves), the call sees `stop` itself.
 */
export function withHandlerTimeout(timeoutMs: number, stop: AbortSignal, run: (call: CallSignal) => Promise<Outcome>): Promise<Outcome> {
  if (!Number.isFinite(timeoutMs)) return run({ signal: stop });
  const call = new LazyCallSignal(stop);
  // One promise and one timer per call (no Promise.race: it allocated two more promises per record).
  return new Promise<Outcome>((resolve, reject) => {
    const timer = setTimeout(() => {
      call.abort(new GatewayError('CEG_DELIVERY_TIMEOUT', `handler did not finish within ${timeoutMs} ms`, { retriable: true }));
      resolve(retry(`handler did not finish within ${timeoutMs} ms (handlerTimeoutMs)`));
    }, timeoutMs);
    // A handler that never returns must not keep the process alive after its subscription stopped
    // (the process stayed up to handlerTimeoutMs after close()); while it runs, its consumer does.
    timer.unref();
    const settle = (): void => {
      clearTimeout(timer);
      call.dispose();
    };
    run(call).then(
      (out) => {
        settle();
        resolve(out);
      },
      (err: unknown) => {
        settle();
        reject(err instanceof Error ? err : new Error(errorMessage(err), { cause: err }));
      },
    );
  });
}
