import { describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { retryPolicy, sleep } from '../../../src/core/retry.js';
import { MAX_TIMER_MS } from '../../../src/core/timer-limit.js';

const base = { maxAttempts: 5, initialDelayMs: 100, factor: 2, maxDelayMs: 1000, jitter: 0 };

describe('retryPolicy', () => {
  it('grows exponentially from initialDelayMs by factor and caps at maxDelayMs (no jitter)', () => {
    const p = retryPolicy(base);
    expect(p.maxAttempts).toBe(5);
    expect([1, 2, 3, 4, 5, 6, 50].map((a) => p.delayMs(a))).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
  });

  it('treats attempt 0 or below like attempt 1', () => {
    const p = retryPolicy(base);
    expect(p.delayMs(0)).toBe(100);
    expect(p.delayMs(-3)).toBe(100);
  });

  it('jitter scales the delay down to delay·(1 − jitter·random)', () => {
    const values = [0, 0.5, 0.999];
    let i = 0;
    const p = retryPolicy({ ...base, jitter: 1, random: () => values[i++]! });
    expect(p.delayMs(3)).toBe(400); // random 0 → full delay
    expect(p.delayMs(3)).toBe(200); // random 0.5 → half
    expect(p.delayMs(3)).toBe(0); // random ~1 → ~0 (rounded)
    const half = retryPolicy({ ...base, jitter: 0.5, random: () => 0.5 });
    expect(half.delayMs(1)).toBe(75);
    expect(half.delayMs(4)).toBe(600);
  });

  it('stays within [delay·(1−jitter), delay] for the default random source', () => {
    const p = retryPolicy({ ...base, jitter: 0.2 });
    for (let n = 0; n < 200; n++) {
      const d = p.delayMs(2);
      expect(d).toBeGreaterThanOrEqual(160);
      expect(d).toBeLessThanOrEqual(200);
    }
  });

  it('gives a finite delay for huge attempt numbers, also with initialDelayMs 0', () => {
    expect(retryPolicy(base).delayMs(5000)).toBe(1000);
    const zero = retryPolicy({ ...base, initialDelayMs: 0 });
    expect(zero.delayMs(1)).toBe(0);
    expect(zero.delayMs(5000)).toBe(0);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(retryPolicy(base))).toBe(true);
  });

  it('refuses bad options with CEG_INVALID_OPTIONS naming every bad one', () => {
    let err: unknown;
    try {
      retryPolicy({ maxAttempts: 0, initialDelayMs: -1, factor: 0.5, maxDelayMs: -2, jitter: 2 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    const ge = err as GatewayError;
    expect(ge.code).toBe('CEG_INVALID_OPTIONS');
    expect(ge.retriable).toBe(false);
    for (const name of ['maxAttempts', 'initialDelayMs', 'factor', 'maxDelayMs', 'jitter']) expect(ge.message).toContain(`${name}:`);
    expect(ge.message.split('; ')).toHaveLength(5);
  });

  it.each([
    [{ maxAttempts: 1.5 }, 'maxAttempts'],
    [{ initialDelayMs: Number.NaN }, 'initialDelayMs'],
    [{ maxDelayMs: 50 }, 'maxDelayMs'],
    // Longer than a Node timer holds (it would fire after 1 ms; a retry's due time would be no time at all).
    [{ maxDelayMs: Infinity }, 'maxDelayMs'],
    [{ maxDelayMs: 2 ** 31 }, 'maxDelayMs'],
    [{ maxDelayMs: Number.NaN }, 'maxDelayMs'],
    [{ jitter: -0.1 }, 'jitter'],
  ])('refuses %j (names %s only)', (over, name) => {
    expect(() => retryPolicy({ ...base, ...over })).toThrow(new RegExp(`^${name}:`));
  });
});

describe('sleep', () => {
  it('resolves after about the given ms', async () => {
    const t0 = performance.now();
    await sleep(30);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25);
  });

  it('rejects at once with the reason of an already aborted signal', async () => {
    const reason = new Error('stop');
    await expect(sleep(10_000, AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it('rejects early with the reason when the signal aborts while sleeping', async () => {
    const c = new AbortController();
    const reason = new GatewayError('CEG_CLOSED', 'closing', { retriable: false });
    const t0 = performance.now();
    // A sleep far beyond the test's timeout: one that waited it out never settles in time; the
    // bound only tells "early" from "the whole sleep", with seconds for a loaded machine.
    const p = sleep(600_000, c.signal);
    setTimeout(() => c.abort(reason), 10);
    await expect(p).rejects.toBe(reason);
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('a wait longer than a Node timer holds (2^31 − 1 ms) does not end after 1 ms, and warns nothing', async () => {
    // One setTimeout of it ran after 1 ms with a TimeoutOverflowWarning (Node's timers).
    const overflows: string[] = [];
    const onWarning = (w: Error): void => void (w.name === 'TimeoutOverflowWarning' && overflows.push(w.message));
    process.on('warning', onWarning);
    try {
      for (const ms of [MAX_TIMER_MS + 1, MAX_TIMER_MS * 3, Number.MAX_SAFE_INTEGER, Infinity]) {
        const c = new AbortController();
        let ended = false;
        const p = sleep(ms, c.signal).then(() => (ended = true));
        p.catch(() => undefined);
        // Long enough for the old 1 ms timer to have fired many times over; what is asserted is that it did not end.
        await new Promise((r) => setTimeout(r, 100));
        expect(ended, String(ms)).toBe(false);
        c.abort(new Error('test over'));
        await expect(p).rejects.toThrow('test over');
      }
      expect(overflows).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('waits the whole of a wait longer than one timer, in steps (timers faked: 25 days cannot run)', async () => {
    vi.useFakeTimers();
    try {
      let ended = false;
      const p = sleep(MAX_TIMER_MS + 5000).then(() => (ended = true));
      await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
      expect(ended).toBe(false);
      await vi.advanceTimersByTimeAsync(4999);
      expect(ended).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(ended).toBe(true);
      await p;
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not react to an abort after it resolved', async () => {
    const c = new AbortController();
    await sleep(1, c.signal);
    c.abort(new Error('late'));
    expect(c.signal.aborted).toBe(true);
  });
});
