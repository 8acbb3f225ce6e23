/**
 * The one retry executor: runs an operation again while its failure is transient, waiting the
 * delays of a {@link RetryPolicy} between attempts, until it succeeds, the budget is used up, the
 * failure is permanent or the caller aborts. Every retry loop of the project goes through it
 * (the publisher, the outbox relay, start-up), as KafkaJS routes every retry through one retrier.
 *
 * The attempt loop and budget are p-retry's; the delays, the classification and the abort are
 * ours, because the policy is the project's own (pure, jitter injected, unit-tested) and p-retry's
 * built-in backoff cannot take it. p-retry also never retries a plain `TypeError` and replaces a
 * thrown non-Error with one; each failure therefore travels through p-retry wrapped, so the
 * caller's classifier sees, and the caller gets back, exactly what the operation threw.
 * Spec: bus spec S5 ("bounded retries with backoff"), P2 ("a retry policy"); STYLE "one central
 *   retry policy", "unknown errors treated as retriable by default" (what not to do).
 */
import pRetry from 'p-retry';
import { GatewayError } from './errors.js';
import type { RetryPolicy } from './retry.js';
import { sleep } from './retry.js';

/** What one attempt is told. */
export interface Attempt {
  /** 1 for the first call, then 2, 3… */
  readonly attempt: number;
  /** The caller's signal, to pass on to the operation (a produce, a query) so an abort cuts it short too. */
  readonly signal: AbortSignal | undefined;
}

/** What {@link RetryingOptions.onRetry} is told before each wait. */
export interface RetryInfo {
  /** The attempt that just failed, from 1. */
  readonly attempt: number;
  /** What it threw, as thrown. */
  readonly error: unknown;
  /** How long the executor waits before the next attempt, ms. */
  readonly delayMs: number;
}

/** Options of {@link retrying}. */
export interface RetryingOptions {
  /** Delays between attempts (`delayMs(attempt)`) and, unless `maxAttempts` overrides it, the budget. */
  readonly policy: RetryPolicy;
  /**
   * Total attempts including the first: an integer ≥ 1, or `Infinity` to retry until success, a
   * permanent failure or an abort. Default `policy.maxAttempts`.
   */
  readonly maxAttempts?: number;
  /**
   * Stops the retrying: no further attempt starts and a wait in progress ends at once, rejecting
   * with `signal.reason`. An attempt already running is not interrupted (pass {@link Attempt.signal}
   * on for that) and its outcome is kept: a success after the abort still resolves.
   */
  readonly signal?: AbortSignal;
  /** true when the failure may go away by waiting. Default {@link isRetriable}: only a GatewayError with `retriable: true`. */
  readonly classify?: (error: unknown) => boolean;
  /** Called before each wait (for logs and counters). Should not throw: an error it throws ends the retrying with that error. */
  readonly onRetry?: (info: RetryInfo) => void;
}

/**
 * The default classification: a {@link GatewayError} whose throw site said `retriable: true`.
 * Anything else (a programming error, a library's own error) is not retried unless the caller's
 * `classify` says so.
 */
export function isRetriable(error: unknown): boolean {
  return error instanceof GatewayError && error.retriable;
}

/** Carries one attempt's failure through p-retry untouched. */
class AttemptFailure extends Error {
  readonly failure: unknown;
  constructor(failure: unknown) {
    super('attempt failed');
    this.failure = failure;
  }
}

/**
 * Runs `fn` until it resolves, retrying failures that `classify` calls transient after the
 * policy's delay.
 * Resolves with the first successful result.
 * Errors: rejects with what the last attempt threw, as thrown, when `classify` says it is
 *   permanent or the attempts are used up; with `signal.reason` when the signal aborts before an
 *   attempt or during a wait; CEG_INVALID_OPTIONS (retriable: false) when `maxAttempts` is
 *   neither an integer ≥ 1 nor Infinity.
 */
export async function retrying<T>(fn: (attempt: Attempt) => Promise<T> | T, o: RetryingOptions): Promise<T> {
  const maxAttempts = o.maxAttempts ?? o.policy.maxAttempts;
  if (!(maxAttempts === Infinity || (Number.isInteger(maxAttempts) && maxAttempts >= 1))) {
    throw new GatewayError('CEG_INVALID_OPTIONS', 'maxAttempts: integer ≥ 1 or Infinity', { retriable: false, details: { maxAttempts } });
  }
  const { signal, policy } = o;
  const classify = o.classify ?? isRetriable;
  signal?.throwIfAborted();
  const waitAfter = async (failure: unknown, attempt: number): Promise<boolean> => {
    if (!classify(failure)) return false;
    signal?.throwIfAborted();
    const delayMs = policy.delayMs(attempt);
    o.onRetry?.({ attempt, error: failure, delayMs });
    await sleep(delayMs, signal);
    return true;
  };
  // The first attempt runs without p-retry: it is the only one on the hot path (every produce),
  // and p-retry's per-call state was a large share of what the gateway's heap promoted (issue 14,
  // BENCHMARKS "GC under single events").
  try {
    return await fn({ attempt: 1, signal });
  } catch (failure) {
    if (maxAttempts === 1 || !(await waitAfter(failure, 1))) throw failure;
  }
  try {
    return await pRetry(
      async (n) => {
        try {
          return await fn({ attempt: n + 1, signal });
        } catch (failure) {
          throw new AttemptFailure(failure);
        }
      },
      {
        retries: maxAttempts - 2,
        minTimeout: 0, // p-retry's own backoff is off: the wait below is the policy's
        shouldRetry: async ({ error, attemptNumber }) => waitAfter((error as AttemptFailure).failure, attemptNumber + 1),
      },
    );
  } catch (err) {
    throw err instanceof AttemptFailure ? err.failure : err;
  }
}
