/**
 * The one retry policy: bounded attempts, exponential backoff with full jitter, a cap.
 * Pure: the random source is injected so tests are deterministic.
 * Spec: bus spec S5 ("bounded retries with backoff"), P2 ("a retry policy").
 */
import { GatewayError } from './errors.js';
import { MAX_TIMER_MS, timerDelay } from './timer-limit.js';

export interface RetryPolicy {
  /** Total attempts including the first, ≥ 1. */
  readonly maxAttempts: number;
  /** Delay before attempt `attempt + 1` after `attempt` failed (attempt counts from 1), ms. */
  delayMs(attempt: number): number;
  /** The longest delay the policy ever gives, ms, when known (policies built by {@link retryPolicy} know it). */
  readonly maxDelayMs?: number;
}

export interface RetryPolicyOptions {
  readonly maxAttempts: number;
  /** First backoff, ms. */
  readonly initialDelayMs: number;
  /** Growth per attempt, ≥ 1. */
  readonly factor: number;
  /** Largest backoff, ms. */
  readonly maxDelayMs: number;
  /** 0 = none, 1 = full jitter (uniform in [delay·(1−jitter), delay]). */
  readonly jitter: number;
  /** Uniform [0, 1); default Math.random. */
  readonly random?: () => number;
}

/**
 * Builds a frozen policy. Errors: CEG_INVALID_OPTIONS (retriable: false) listing every bad option
 * (`maxDelayMs` above {@link MAX_TIMER_MS}, Infinity included, is one).
 */
export function retryPolicy(o: RetryPolicyOptions): RetryPolicy {
  const problems = [
    !(Number.isInteger(o.maxAttempts) && o.maxAttempts >= 1) && 'maxAttempts: integer ≥ 1',
    !(o.initialDelayMs >= 0) && 'initialDelayMs: ms ≥ 0',
    !(o.factor >= 1) && 'factor: ≥ 1',
    !(o.maxDelayMs >= o.initialDelayMs) && 'maxDelayMs: ms ≥ initialDelayMs',
    // A longer wait is not a timer Node can hold (it would fire after 1 ms), and a retry's due time
    // travels in a header: Infinity there is no time at all.
    !(o.maxDelayMs <= MAX_TIMER_MS) && `maxDelayMs: ms ≤ ${MAX_TIMER_MS} (about 24.8 days)`,
    !(o.jitter >= 0 && o.jitter <= 1) && 'jitter: 0..1',
  ].filter((p): p is string => typeof p === 'string');
  if (problems.length > 0) throw new GatewayError('CEG_INVALID_OPTIONS', problems.join('; '), { retriable: false });
  const random = o.random ?? Math.random;
  return Object.freeze({
    maxAttempts: o.maxAttempts,
    maxDelayMs: o.maxDelayMs,
    delayMs(attempt: number): number {
      // initialDelayMs 0 stays 0: 0 · factor^n is NaN once factor^n overflows to Infinity.
      const grown = o.initialDelayMs === 0 ? 0 : o.initialDelayMs * o.factor ** Math.max(0, attempt - 1);
      const base = Math.min(o.maxDelayMs, grown);
      return Math.round(base * (1 - o.jitter * random()));
    },
  });
}

/**
 * Resolves after `ms`, or rejects early with the signal's reason when it aborts. A wait longer than
 * a Node timer holds ({@link MAX_TIMER_MS}, about 24.8 days) is waited in steps of at most that
 * (timerDelay), so it lasts as long as asked: one timer of it ran after 1 ms, with a
 * TimeoutOverflowWarning on stderr. Units: ms; NaN, negative and 0 wait about 1 ms, as Node's own timer does.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    // What is left to wait after each step; the first step is the whole wait up to the bound.
    let left = ms;
    const step = (): void => {
      const d = timerDelay(left);
      left -= d;
      timer = setTimeout(() => {
        if (left >= 1) {
          step();
          return;
        }
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, d);
    };
    step();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
