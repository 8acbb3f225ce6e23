/**
 * The retry executor on fake time: which failures it retries, how long it waits between
 * attempts, what it reports, when it gives up and how an abort stops it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { isRetriable, retrying } from '../../../src/core/retrying.js';
import type { Attempt, RetryInfo } from '../../../src/core/retrying.js';

const policy = (maxAttempts: number) => retryPolicy({ maxAttempts, initialDelayMs: 100, factor: 2, maxDelayMs: 1000, jitter: 0 });
const transient = (n = 0) => new GatewayError('CEG_BROKER_UNAVAILABLE', `down ${n}`, { retriable: true });
const permanent = () => new GatewayError('CEG_PAYLOAD_TOO_LARGE', 'too large', { retriable: false });

/** An operation that throws the given failures in turn, then resolves with `result`. */
function scripted<T>(failures: readonly unknown[], result: T) {
  const calls: Attempt[] = [];
  const fn = async (a: Attempt): Promise<T> => {
    calls.push(a);
    await Promise.resolve();
    if (calls.length <= failures.length) throw failures[calls.length - 1];
    return result;
  };
  return { fn, calls };
}

/** Settles a promise into a value for assertions, without an unhandled rejection while time is advanced. */
function settle<T>(p: Promise<T>): { readonly state: () => { status: 'pending' } | PromiseSettledResult<T> } {
  let s: { status: 'pending' } | PromiseSettledResult<T> = { status: 'pending' };
  p.then(
    (value) => (s = { status: 'fulfilled', value }),
    (reason: unknown) => (s = { status: 'rejected', reason }),
  );
  return { state: () => s };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('retrying: success and retries', () => {
  it('resolves with the first result, calling the operation once with attempt 1 and the signal', async () => {
    const ac = new AbortController();
    const { fn, calls } = scripted([], 'ok');
    await expect(retrying(fn, { policy: policy(3), signal: ac.signal })).resolves.toBe('ok');
    expect(calls).toEqual([{ attempt: 1, signal: ac.signal }]);
  });

  it('retries a retriable GatewayError after the policy delays, reporting each retry before its wait', async () => {
    const errors = [transient(1), transient(2), transient(3)];
    const { fn, calls } = scripted(errors, 42);
    const seen: RetryInfo[] = [];
    const run = settle(retrying(fn, { policy: policy(5), onRetry: (i) => seen.push(i) }));
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    expect(seen).toEqual([{ attempt: 1, error: errors[0], delayMs: 100 }]);
    await vi.advanceTimersByTimeAsync(99);
    expect(calls).toHaveLength(1); // still waiting the first delay
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(200 + 400);
    expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
    expect(seen.map((i) => [i.attempt, i.error, i.delayMs])).toEqual([
      [1, errors[0], 100],
      [2, errors[1], 200],
      [3, errors[2], 400],
    ]);
    expect(run.state()).toEqual({ status: 'fulfilled', value: 42 });
  });

  it('gives up after maxAttempts and rejects with the last error as thrown', async () => {
    const errors = [transient(1), transient(2), transient(3)];
    const { fn, calls } = scripted(errors, 'never');
    const seen: RetryInfo[] = [];
    const run = settle(retrying(fn, { policy: policy(3), onRetry: (i) => seen.push(i) }));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toHaveLength(3);
    expect(seen.map((i) => i.attempt)).toEqual([1, 2]);
    expect(run.state()).toEqual({ status: 'rejected', reason: errors[2] });
  });

  it('maxAttempts overrides the policy budget; Infinity retries until success', async () => {
    const errors = Array.from({ length: 40 }, (_, i) => transient(i));
    const { fn, calls } = scripted(errors, 'finally');
    const run = settle(retrying(fn, { policy: policy(1), maxAttempts: Infinity }));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toHaveLength(41);
    expect(run.state()).toEqual({ status: 'fulfilled', value: 'finally' });

    const two = scripted([transient(), transient(), transient()], 'x');
    const capped = settle(retrying(two.fn, { policy: policy(10), maxAttempts: 2 }));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(two.calls).toHaveLength(2);
    expect(capped.state()).toMatchObject({ status: 'rejected', reason: { message: 'down 0' } });
  });

  it('refuses a maxAttempts that is not an integer ≥ 1 or Infinity (CEG_INVALID_OPTIONS)', async () => {
    for (const maxAttempts of [0, -1, 1.5, Number.NaN]) {
      await expect(retrying(() => 1, { policy: policy(3), maxAttempts })).rejects.toMatchObject({ code: 'CEG_INVALID_OPTIONS', retriable: false });
    }
  });
});

describe('retrying: classification', () => {
  it('does not retry a GatewayError with retriable: false', async () => {
    const err = permanent();
    const { fn, calls } = scripted([err], 'never');
    const onRetry = vi.fn();
    await expect(retrying(fn, { policy: policy(5), onRetry })).rejects.toBe(err);
    expect(calls).toHaveLength(1);
    expect(onRetry).not.toHaveBeenCalled();
  });

  it('does not retry unknown errors by default, and hands them back as thrown (Error, TypeError, a non-Error value)', async () => {
    for (const thrown of [new Error('bug'), new TypeError('x is not a function'), 'a string', { code: 'ECONNRESET' }]) {
      const { fn, calls } = scripted([thrown], 'never');
      await expect(retrying(fn, { policy: policy(5) })).rejects.toBe(thrown);
      expect(calls).toHaveLength(1);
    }
  });

  it('retries whatever the caller classifies as transient, TypeErrors and non-Error values included', async () => {
    const thrown = [new TypeError('fetch failed'), 'a string', permanent()];
    const { fn, calls } = scripted(thrown, 'done');
    const classify = vi.fn(() => true);
    const run = settle(retrying(fn, { policy: policy(5), classify }));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toHaveLength(4);
    expect(classify.mock.calls.map((c: unknown[]) => c[0])).toEqual(thrown);
    expect(run.state()).toEqual({ status: 'fulfilled', value: 'done' });
  });

  it('isRetriable is true only for a GatewayError that says retriable: true', () => {
    expect([transient(), permanent(), new Error('x'), 'x', undefined, { retriable: true }].map(isRetriable)).toEqual([true, false, false, false, false, false]);
  });

  it('an onRetry that throws ends the retrying with its error', async () => {
    const hookError = new Error('hook failed');
    const { fn, calls } = scripted([transient()], 'never');
    await expect(
      retrying(fn, {
        policy: policy(5),
        onRetry: () => {
          throw hookError;
        },
      }),
    ).rejects.toBe(hookError);
    expect(calls).toHaveLength(1);
  });
});

describe('retrying: abort', () => {
  it('an abort during a wait rejects at once with the reason, and no further attempt starts', async () => {
    const ac = new AbortController();
    const reason = new GatewayError('CEG_CLOSED', 'closing', { retriable: false });
    const { fn, calls } = scripted([transient(), transient()], 'never');
    const run = settle(retrying(fn, { policy: retryPolicy({ maxAttempts: 5, initialDelayMs: 60_000, factor: 1, maxDelayMs: 60_000, jitter: 0 }), signal: ac.signal }));
    await vi.advanceTimersByTimeAsync(1000);
    expect(run.state()).toEqual({ status: 'pending' });
    ac.abort(reason);
    await vi.advanceTimersByTimeAsync(0);
    expect(run.state()).toEqual({ status: 'rejected', reason });
    await vi.advanceTimersByTimeAsync(120_000);
    expect(calls).toHaveLength(1);
  });

  it('a signal aborted before the start rejects with its reason without calling the operation', async () => {
    const reason = new Error('stopped');
    const { fn, calls } = scripted([], 'never');
    await expect(retrying(fn, { policy: policy(3), signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(calls).toHaveLength(0);
  });

  it('keeps the outcome of the attempt running when the abort comes: a success resolves, a transient failure ends with the reason', async () => {
    const ac = new AbortController();
    const won = retrying(
      () => {
        ac.abort(new Error('stopping'));
        return Promise.resolve('stored');
      },
      { policy: policy(3), signal: ac.signal },
    );
    await expect(won).resolves.toBe('stored');

    const ac2 = new AbortController();
    const reason = new Error('stopping');
    const onRetry = vi.fn();
    let calls = 0;
    const lost = retrying(
      () => {
        calls++;
        ac2.abort(reason);
        return Promise.reject(transient());
      },
      { policy: policy(3), signal: ac2.signal, onRetry },
    );
    await expect(lost).rejects.toBe(reason);
    expect(calls).toBe(1);
    expect(onRetry).not.toHaveBeenCalled();
  });

  it('a permanent failure of the attempt running at the abort is reported as itself, not as the abort', async () => {
    const ac = new AbortController();
    const err = permanent();
    const run = retrying(
      () => {
        ac.abort(new Error('stopping'));
        return Promise.reject(err);
      },
      { policy: policy(3), signal: ac.signal },
    );
    await expect(run).rejects.toBe(err);
  });
});
