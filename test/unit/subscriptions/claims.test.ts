/**
 * Creating a subscription is a check-and-set over every instance (issue 8 follow-up): two stores
 * (two gateway instances) on one definitions topic — here on the in-memory transport, the same
 * code as on Kafka — claim one name at the same moment: exactly one claim wins, every store agrees
 * on which, and a store that reads the topic from the start later decides the same way. A claim
 * whose writer died holds a name for CLAIM_TTL_MS only.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLAIM_TTL_MS, SubscriptionStore } from '../../../src/bus/subscriptions/store.js';
import { createLogger } from '../../../src/observability/index.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type { Transport } from '../../../src/transport/port.js';
import type { StoredSubscription } from '../../../src/bus/subscriptions/stored.js';

const log = createLogger({ level: 'silent' });
const stores: SubscriptionStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.stop()));
});

async function store(t: Transport): Promise<SubscriptionStore> {
  const s = new SubscriptionStore(t, 'defs', log);
  stores.push(s);
  await s.start();
  return s;
}

describe('subscription name claims', () => {
  it('of concurrent claims on one name from several instances exactly one wins (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 6 }), fc.integer({ min: 2, max: 4 }), async (claimants, instances) => {
        const t = createMemoryTransport();
        const all = await Promise.all(Array.from({ length: instances }, () => store(t)));
        const claims = await Promise.all(Array.from({ length: claimants }, (_, i) => all[i % instances]!.claim('ce-gateway.sub.anonymous.same')));
        expect(claims.filter((c) => c.won)).toHaveLength(1);
        await Promise.all(stores.splice(0).map((s) => s.stop()));
      }),
      { numRuns: 20 },
    );
  });

  it('a pending claim blocks the name; once every claim on it is released it can be claimed again', async () => {
    const t = createMemoryTransport();
    const [a, b] = [await store(t), await store(t)];
    const first = await a.claim('g1');
    expect(first.won).toBe(true);
    const second = await b.claim('g1');
    expect(second.won).toBe(false);
    await b.release(second);
    await a.release(first); // the creator gave up (e.g. its offsets could not be set)
    expect((await b.claim('g1')).won).toBe(true);
  });

  it('a claim older than CLAIM_TTL_MS (its writer died) does not block a later one', async () => {
    const a = await store(createMemoryTransport());
    // The claims' record timestamps are their writers' clocks.
    let now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      expect((await a.claim('g2')).won).toBe(true); // never released: its writer "died"
      now += CLAIM_TTL_MS / 2;
      const lost = await a.claim('g2');
      expect(lost.won).toBe(false); // still held
      await a.release(lost); // as the service does with a lost claim
      now += CLAIM_TTL_MS / 2 + 1;
      expect((await a.claim('g2')).won).toBe(true);
    } finally {
      clock.mockRestore();
    }
  });

  it('a fresh reader of the topic decides every claim as the writers did', async () => {
    const t = createMemoryTransport();
    const [a, b] = [await store(t), await store(t)];
    const results = await Promise.all([a.claim('g3'), b.claim('g3'), a.claim('g4'), b.claim('g4')]);
    expect(results.filter((c) => c.won).map((c) => c.group).sort()).toEqual(['g3', 'g4']);
    // A third instance starting later claims both names: both are held by pending claims.
    const c = await store(t);
    expect((await c.claim('g3')).won).toBe(false);
    expect((await c.claim('g4')).won).toBe(false);
  });

  describe('the owner quota (issue 11 maxSubscriptions), decided at the claim record', () => {
    const pull = (owner: string, name: string): StoredSubscription => ({
      v: 1, name, owner, group: `ce-gateway.sub.${owner}.${name}`, kinds: ['PriceLoadingCompleted'], filters: [], start: 'latest', ordering: 'key',
      retry: { maxAttempts: 8, backoff: { initialMs: 1000, factor: 2, maxMs: 60000, jitter: 0.2 }, maxAgeMs: 86400000, timeoutMs: 10000 },
      concurrency: 4, rateLimit: null, state: 'active', delivery: { mode: 'pull', data: 'json' }, createdAt: '2026-12-01T10:00:00.000Z', updatedAt: '2026-12-01T10:00:00.000Z', generation: 1,
    });

    it('of concurrent creates of distinct names on several instances exactly max win, the rest are refused for the quota (property)', async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 2, max: 3 }), fc.integer({ min: 0, max: 2 }), async (max, extra, instances, existing) => {
          const t = createMemoryTransport();
          const all = await Promise.all(Array.from({ length: instances }, () => store(t)));
          // Some subscriptions the owner has already (another owner's never count).
          for (let i = 0; i < existing; i++) await all[0]!.put(pull('acme', `old-${i}`));
          await all[0]!.put(pull('globex', 'theirs'));
          const tries = Math.max(max - existing, 0) + extra;
          const claims = await Promise.all(Array.from({ length: tries }, (_, i) => all[i % instances]!.claim(`ce-gateway.sub.acme.new-${i}`, undefined, { owner: 'acme', max })));
          const won = claims.filter((c) => c.won);
          expect(won).toHaveLength(Math.max(max - existing, 0));
          expect(claims.filter((c) => !c.won).every((c) => c.refusal === 'quota')).toBe(true);
          // A fresh instance reading the topic decides the same: no room left for acme, room for globex.
          const late = await store(t);
          expect(await late.claim('ce-gateway.sub.acme.late', undefined, { owner: 'acme', max })).toMatchObject({ won: false, refusal: 'quota' });
          expect((await late.claim('ce-gateway.sub.globex.late', undefined, { owner: 'globex', max: 2 })).won).toBe(true);
          await Promise.all(stores.splice(0).map((s) => s.stop()));
        }),
        { numRuns: 25 },
      );
    });

    it('a definition written in place of a winning claim counts once; a release or a delete gives the room back', async () => {
      const t = createMemoryTransport();
      const [a, b] = [await store(t), await store(t)];
      const quota = { owner: 'acme', max: 2 };
      const one = await a.claim('ce-gateway.sub.acme.one', undefined, quota);
      await a.put(pull('acme', 'one'), undefined, one);
      const two = await b.claim('ce-gateway.sub.acme.two', undefined, quota);
      expect(two.won).toBe(true);
      const three = await a.claim('ce-gateway.sub.acme.three', undefined, quota);
      expect(three).toMatchObject({ won: false, refusal: 'quota' });
      await a.release(three);
      await b.release(two); // its creator gave up: the room is free again
      const again = await a.claim('ce-gateway.sub.acme.three', undefined, quota);
      expect(again.won).toBe(true);
      await a.put(pull('acme', 'three'), undefined, again);
      await b.remove('ce-gateway.sub.acme.one');
      expect((await b.claim('ce-gateway.sub.acme.four', undefined, quota)).won).toBe(true);
      // The name rule still comes first: a held name is refused for the name, not the quota.
      expect(await b.claim('ce-gateway.sub.acme.three', undefined, { owner: 'acme', max: 10 })).toMatchObject({ won: false, refusal: 'name' });
    });
  });
});
