import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { createMemoryIdempotencyStore, deliveryKey, idempotent } from '../../../src/bus/idempotency/index.js';
import type { FinalOutcome, IdempotencyKey, IdempotencyStore } from '../../../src/bus/idempotency/index.js';
import { ack, deadLetter, duplicate, retry } from '../../../src/bus/subscriber/index.js';
import type { DeliveryContext } from '../../../src/bus/subscriber/index.js';
import type { Envelope } from '../../../src/envelope/types.js';

const ev = (id: string, source = 'urn:unit'): Envelope => ({ attributes: { specversion: '1.0', id, source, type: 'unit.test' } });
const ctx = (subscription = 'sub', attempt = 1): DeliveryContext => ({ subscription, topic: 't', partition: 0, offset: 3n, attempt });

/** A store whose calls can be made to fail; records every call. */
function flakyStore(inner: IdempotencyStore = createMemoryIdempotencyStore()): IdempotencyStore & { failLookup: boolean; failMark: boolean; marks: [IdempotencyKey, FinalOutcome, number][] } {
  const s = {
    kind: 'memory' as const,
    failLookup: false,
    failMark: false,
    marks: [] as [IdempotencyKey, FinalOutcome, number][],
    lookup: (key: IdempotencyKey) => (s.failLookup ? Promise.reject(new GatewayError('CEG_INTERNAL', 'store down', { retriable: true })) : inner.lookup(key)),
    markDone: (key: IdempotencyKey, outcome: FinalOutcome, windowMs: number) => {
      s.marks.push([key, outcome, windowMs]);
      return s.failMark ? Promise.reject(new Error('store down')) : inner.markDone(key, outcome, windowMs);
    },
    purgeExpired: () => inner.purgeExpired(),
    close: () => inner.close(),
  };
  return s;
}

describe('idempotent()', () => {
  it('records a handled event (nothing returned or ack) with the window and drops its redeliveries', async () => {
    const store = flakyStore();
    const calls: string[] = [];
    const skipped: string[] = [];
    const h = idempotent(store, (e) => Promise.resolve(e.attributes.id === 'b' ? ack : void calls.push(e.attributes.id)), { windowMs: 5000, onSkip: (e, c) => skipped.push(`${e.attributes.id}@${c.attempt}`) });
    expect(await h(ev('a'), ctx())).toBeUndefined();
    expect(await h(ev('b'), ctx())).toEqual(ack);
    expect(await h(ev('a'), ctx('sub', 2))).toEqual(duplicate);
    expect(await h(ev('b'), ctx('sub', 2))).toEqual(duplicate);
    expect(calls).toEqual(['a']);
    expect(skipped).toEqual(['a@2', 'b@2']);
    expect(store.marks).toEqual([
      [{ scope: 'sub', source: 'urn:unit', id: 'a' }, 'handled', 5000],
      [{ scope: 'sub', source: 'urn:unit', id: 'b' }, 'handled', 5000],
    ]);
    expect(h.stats()).toEqual({ handled: 2, skipped: 2, markFailed: 0 });
  });

  it('records nothing for retry, deadLetter or a throw (never drops a record that still has to run)', async () => {
    const store = flakyStore();
    const outs = [() => Promise.resolve(retry('r')), () => Promise.resolve(deadLetter('d')), () => Promise.reject(new GatewayError('CEG_INVALID_DATA', 'no', { retriable: false }))];
    let i = 0;
    const h = idempotent(store, () => (outs[i++] ?? (() => Promise.resolve()))(), { windowMs: 1000 });
    expect(await h(ev('x'), ctx())).toEqual(retry('r'));
    expect(await h(ev('x'), ctx())).toEqual(deadLetter('d'));
    await expect(h(ev('x'), ctx())).rejects.toMatchObject({ code: 'CEG_INVALID_DATA', retriable: false });
    expect(store.marks).toEqual([]);
    expect(await h(ev('x'), ctx())).toBeUndefined();
    expect([i, store.marks.length, h.stats()]).toEqual([4, 1, { handled: 1, skipped: 0, markFailed: 0 }]);
  });

  it('does not run the handler when the lookup fails: the delivery rejects and is retried by the runner', async () => {
    const store = flakyStore();
    store.failLookup = true;
    let calls = 0;
    const h = idempotent(store, () => Promise.resolve(void calls++), { windowMs: 1000 });
    await expect(h(ev('x'), ctx())).rejects.toMatchObject({ code: 'CEG_INTERNAL', retriable: true });
    expect(calls).toBe(0);
  });

  it('still acknowledges a handled event whose record failed, counting and reporting the failure', async () => {
    const store = flakyStore();
    store.failMark = true;
    const reported: string[] = [];
    const h = idempotent(store, () => Promise.resolve(), { windowMs: 1000, onMarkError: (err, e) => reported.push(`${e.attributes.id}: ${(err as Error).message}`) });
    expect(await h(ev('x'), ctx())).toBeUndefined();
    expect(reported).toEqual(['x: store down']);
    expect(h.stats()).toEqual({ handled: 1, skipped: 0, markFailed: 1 });
  });

  it('runs concurrent deliveries of one key one at a time: the second sees the first done and skips', async () => {
    const store = flakyStore();
    let running = 0;
    let maxRunning = 0;
    let calls = 0;
    const h = idempotent(
      store,
      async () => {
        calls++;
        maxRunning = Math.max(maxRunning, ++running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
      },
      { windowMs: 1000 },
    );
    await Promise.all([h(ev('x'), ctx()), h(ev('x'), ctx()), h(ev('x'), ctx()), h(ev('y'), ctx())]);
    expect([calls, maxRunning]).toEqual([2, 2]); // x once, y once; x and y overlapped
    expect(h.stats()).toEqual({ handled: 2, skipped: 2, markFailed: 0 });
  });

  it('runs the next delivery of a key after a failed one, even when they were concurrent', async () => {
    const store = flakyStore();
    let calls = 0;
    const h = idempotent(store, () => (++calls === 1 ? Promise.reject(new Error('first fails')) : Promise.resolve()), { windowMs: 1000 });
    const [a, b] = await Promise.allSettled([h(ev('x'), ctx()), h(ev('x'), ctx())]);
    expect([a.status, b.status, calls]).toEqual(['rejected', 'fulfilled', 2]);
  });

  it('scopes by subscription by default, by the scope option when given', async () => {
    const store = flakyStore();
    const perSub = idempotent(store, () => Promise.resolve(), { windowMs: 1000 });
    await perSub(ev('x'), ctx('one'));
    await perSub(ev('x'), ctx('two'));
    const shared = idempotent(store, () => Promise.resolve(), { windowMs: 1000, scope: 'shared' });
    await shared(ev('x'), ctx('one'));
    await shared(ev('x'), ctx('two'));
    expect(store.marks.map(([key]) => key.scope)).toEqual(['one', 'two', 'shared']);
    expect([perSub.stats().skipped, shared.stats().skipped]).toEqual([0, 1]);
    expect(deliveryKey(ev('i', 'urn:s'), ctx('sub'))).toEqual({ scope: 'sub', source: 'urn:s', id: 'i' });
  });

  it('refuses a bad window when wrapping', () => {
    for (const windowMs of [0, -1, 0.5, Number.NaN]) {
      expect(() => idempotent(createMemoryIdempotencyStore(), () => Promise.resolve(), { windowMs })).toThrow(expect.objectContaining({ code: 'CEG_INVALID_OPTIONS', retriable: false }) as Error);
    }
  });
});
