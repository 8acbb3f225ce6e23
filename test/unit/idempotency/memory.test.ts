import { afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { createMemoryIdempotencyStore } from '../../../src/bus/idempotency/index.js';
import type { IdempotencyKey } from '../../../src/bus/idempotency/index.js';

const k = (id: string): IdempotencyKey => ({ scope: 'sub', source: 'urn:unit', id });

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('memory idempotency store', () => {
  it('expires an entry exactly when its window ends (fake clock)', async () => {
    const c = clock();
    const s = createMemoryIdempotencyStore({ now: c.now });
    await s.markDone(k('a'), 'handled', 1000);
    c.advance(999);
    expect(await s.lookup(k('a'))).toBe('handled');
    c.advance(1);
    expect(await s.lookup(k('a'))).toBeUndefined();
    expect(s.stats().size).toBe(0); // dropped by the lookup that found it expired
  });

  it('evicts the least recently used entry beyond maxEntries and counts it', async () => {
    const s = createMemoryIdempotencyStore({ maxEntries: 3 });
    for (const id of ['a', 'b', 'c']) await s.markDone(k(id), 'handled', 60_000);
    expect(await s.lookup(k('a'))).toBe('handled'); // a is now the most recent: b is the oldest
    await s.markDone(k('d'), 'handled', 60_000);
    expect([await s.lookup(k('a')), await s.lookup(k('b')), await s.lookup(k('c')), await s.lookup(k('d'))]).toEqual(['handled', undefined, 'handled', 'handled']);
    expect(s.stats()).toEqual({ size: 3, evicted: 1 });
    await s.markDone(k('c'), 'dead-lettered', 60_000); // re-recording refreshes c: a is now the oldest
    await s.markDone(k('e'), 'handled', 60_000);
    expect([await s.lookup(k('a')), await s.lookup(k('c')), await s.lookup(k('e'))]).toEqual([undefined, 'dead-lettered', 'handled']);
    expect(s.stats()).toEqual({ size: 3, evicted: 2 });
  });

  it('purgeExpired removes only expired entries and reports how many', async () => {
    const c = clock();
    const s = createMemoryIdempotencyStore({ now: c.now });
    await s.markDone(k('short-1'), 'handled', 100);
    await s.markDone(k('short-2'), 'handled', 100);
    await s.markDone(k('long'), 'handled', 10_000);
    c.advance(100);
    expect(await s.purgeExpired()).toBe(2);
    expect(s.stats().size).toBe(1);
    expect(await s.lookup(k('long'))).toBe('handled');
  });

  it('sweeps expired entries on its cleanup interval, and stops sweeping when closed', async () => {
    vi.useFakeTimers();
    const c = clock();
    const s = createMemoryIdempotencyStore({ now: c.now, cleanupIntervalMs: 1000 });
    await s.markDone(k('a'), 'handled', 500);
    await s.markDone(k('b'), 'handled', 5000);
    c.advance(600);
    vi.advanceTimersByTime(999);
    expect(s.stats().size).toBe(2);
    vi.advanceTimersByTime(1);
    expect(s.stats().size).toBe(1);
    await s.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('refuses bad options, naming each one', async () => {
    try {
      createMemoryIdempotencyStore({ maxEntries: 0, cleanupIntervalMs: -5 });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      const e = err as GatewayError;
      expect([e.code, e.retriable, e.details['fields']]).toEqual(['CEG_INVALID_OPTIONS', false, ['maxEntries', 'cleanupIntervalMs']]);
    }
    expect(() => createMemoryIdempotencyStore({ maxEntries: 1.5 })).toThrow(/maxEntries/);
    // An interval longer than a Node timer holds would run every 1 ms.
    expect(() => createMemoryIdempotencyStore({ cleanupIntervalMs: 3e9 })).toThrow(/^cleanupIntervalMs: integer milliseconds from 0 to 2147483647/);
    await createMemoryIdempotencyStore({ cleanupIntervalMs: 2_147_483_647 }).close();
  });
});
