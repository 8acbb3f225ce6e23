/**
 * The IdempotencyStore port's contract (bus spec S4): every adapter (memory, PostgreSQL) must pass
 * it. `make()` returns a fresh, empty store each time (PostgreSQL: a table unique to the call).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { idempotent } from '../../src/bus/idempotency/index.js';
import type { IdempotencyKey, IdempotencyStore } from '../../src/bus/idempotency/index.js';
import { duplicate, retry } from '../../src/bus/subscriber/index.js';
import type { DeliveryContext } from '../../src/bus/subscriber/index.js';
import type { Envelope } from '../../src/envelope/types.js';
import { caughtAsync as failure } from '../helpers/errors.js';

export interface IdempotencyContractOptions {
  /** true: a store reopened on the same backing storage sees what a closed one recorded (PostgreSQL). */
  readonly durable: boolean;
  /** Opens a second store on the backing storage of `store` (a process restart). */
  readonly reopen: (store: IdempotencyStore) => Promise<IdempotencyStore>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const key = (over: Partial<IdempotencyKey> = {}): IdempotencyKey => ({ scope: 'sub-a', source: 'urn:test:contract', id: randomUUID(), ...over });

function event(source: string, id: string): Envelope {
  return { attributes: { specversion: '1.0', id, source, type: 'contract.test' } };
}

function ctx(subscription: string, attempt = 1): DeliveryContext {
  return { subscription, topic: 'contract.topic', partition: 0, offset: 7n, attempt };
}

export function idempotencyContract(name: string, make: () => Promise<IdempotencyStore>, o: IdempotencyContractOptions): void {
  describe(`IdempotencyStore contract: ${name}`, () => {
    const opened: IdempotencyStore[] = [];
    const fresh = async (): Promise<IdempotencyStore> => {
      const s = await make();
      opened.push(s);
      return s;
    };
    afterAll(async () => {
      for (const s of opened) await s.close();
    });

    it('knows nothing of a key never recorded', async () => {
      const s = await fresh();
      expect(await s.lookup(key())).toBeUndefined();
    });

    it('returns the recorded final outcome: handled or dead-lettered', async () => {
      const s = await fresh();
      const a = key();
      const b = key();
      await s.markDone(a, 'handled', 60_000);
      await s.markDone(b, 'dead-lettered', 60_000);
      expect([await s.lookup(a), await s.lookup(b)]).toEqual(['handled', 'dead-lettered']);
    });

    it('keys by scope + source + id: changing any one part is another key, and separators cannot be forged', async () => {
      const s = await fresh();
      const k = { scope: 'sub|a', source: 'urn:a|b', id: 'c' };
      await s.markDone(k, 'handled', 60_000);
      const others: IdempotencyKey[] = [
        { ...k, scope: 'sub|b' },
        { ...k, source: 'urn:a|c' },
        { ...k, id: 'd' },
        { scope: 'sub', source: 'a|urn:a|b', id: 'c' },
        { scope: 'sub|a', source: 'urn:a', id: 'b|c' },
        { scope: 'sub|a', source: 'urn:a","b', id: 'c' },
      ];
      expect(await s.lookup({ ...k })).toBe('handled');
      for (const other of others) expect(await s.lookup(other)).toBeUndefined();
    });

    it('stores long and non-ASCII sources and ids verbatim', async () => {
      const s = await fresh();
      const long = key({ source: `urn:x:${'s'.repeat(5000)}`, id: `ü-€-${'i'.repeat(3000)}` });
      await s.markDone(long, 'handled', 60_000);
      expect(await s.lookup(long)).toBe('handled');
      expect(await s.lookup({ ...long, id: long.id.slice(0, -1) })).toBeUndefined();
    });

    it('forgets a key once its window passed, and purgeExpired deletes exactly the expired entries', async () => {
      const s = await fresh();
      const short = [key(), key(), key()];
      const long = key();
      for (const k of short) await s.markDone(k, 'handled', 250);
      await s.markDone(long, 'handled', 60_000);
      expect(await s.lookup(short[0]!)).toBe('handled');
      await sleep(450);
      expect(await s.lookup(long)).toBe('handled');
      expect(await s.purgeExpired()).toBe(3);
      expect(await s.purgeExpired()).toBe(0);
      expect(await s.lookup(long)).toBe('handled');
      for (const k of short) expect(await s.lookup(k)).toBeUndefined();
    });

    it('recording a key again overwrites its outcome and restarts its window', async () => {
      const s = await fresh();
      const k = key();
      await s.markDone(k, 'dead-lettered', 500);
      await sleep(300);
      await s.markDone(k, 'handled', 500);
      await sleep(300); // 600 ms after the first record, 300 ms after the second
      expect(await s.lookup(k)).toBe('handled');
    });

    it('takes concurrent records of one key without error', async () => {
      const s = await fresh();
      const k = key();
      await Promise.all(Array.from({ length: 20 }, (_, i) => s.markDone(k, i % 2 === 0 ? 'handled' : 'dead-lettered', 60_000)));
      expect(['handled', 'dead-lettered']).toContain(await s.lookup(k));
    });

    it('refuses a window that is not an integer number of ms in range, recording nothing', async () => {
      const s = await fresh();
      const k = key();
      for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 11 * 365 * 24 * 3600_000]) {
        const err = await failure(s.markDone(k, 'handled', bad));
        expect([err.code, err.retriable, err.details['field']]).toEqual(['CEG_INVALID_OPTIONS', false, 'windowMs']);
      }
      expect(await s.lookup(k)).toBeUndefined();
    });

    it('rejects calls after close with a retriable CEG_CLOSED', async () => {
      const s = await make();
      await s.close();
      await s.close(); // idempotent
      const err = await failure(s.lookup(key()));
      expect([err.code, err.retriable]).toEqual(['CEG_CLOSED', true]);
      expect((await failure(s.markDone(key(), 'handled', 1000))).code).toBe('CEG_CLOSED');
    });

    it(o.durable ? 'survives a restart: a reopened store still knows the key' : 'is not durable: a new store knows nothing', async () => {
      const s = await make();
      const k = key();
      await s.markDone(k, 'handled', 60_000);
      await s.close();
      const again = await o.reopen(s);
      opened.push(again);
      expect(await again.lookup(k)).toBe(o.durable ? 'handled' : undefined);
    });

    describe('idempotent() over this store', () => {
      it('runs the handler once for a redelivered event and counts the skip', async () => {
        const s = await fresh();
        const seen: string[] = [];
        const h = idempotent(s, (e) => Promise.resolve(void seen.push(e.attributes.id)), { windowMs: 60_000 });
        const e = event('urn:test:redelivery', randomUUID());
        expect(await h(e, ctx('sub-1'))).toBeUndefined();
        expect(await h(e, ctx('sub-1'))).toEqual(duplicate);
        expect(await h(e, ctx('sub-1', 2))).toEqual(duplicate);
        expect(seen).toEqual([e.attributes.id]);
        expect(h.stats()).toEqual({ handled: 1, skipped: 2, markFailed: 0 });
        expect(await s.lookup({ scope: 'sub-1', source: 'urn:test:redelivery', id: e.attributes.id })).toBe('handled');
      });

      it('records nothing for retry or a throw, so the next delivery runs the handler again', async () => {
        const s = await fresh();
        let calls = 0;
        const h = idempotent(
          s,
          () => {
            calls++;
            if (calls === 1) return Promise.resolve(retry('not yet'));
            if (calls === 2) return Promise.reject(new Error('boom'));
            return Promise.resolve();
          },
          { windowMs: 60_000 },
        );
        const e = event('urn:test:retry', randomUUID());
        expect(await h(e, ctx('sub-1'))).toEqual({ kind: 'retry', reason: 'not yet' });
        await expect(h(e, ctx('sub-1', 2))).rejects.toThrow('boom');
        expect(await h(e, ctx('sub-1', 3))).toBeUndefined();
        expect(await h(e, ctx('sub-1', 4))).toEqual(duplicate);
        expect(calls).toBe(3);
        expect(h.stats()).toEqual({ handled: 1, skipped: 1, markFailed: 0 });
      });

      it('keeps subscriptions apart: the same event is handled once per subscription', async () => {
        const s = await fresh();
        const seen: string[] = [];
        const h = idempotent(s, (_e, c) => Promise.resolve(void seen.push(c.subscription)), { windowMs: 60_000 });
        const e = event('urn:test:scopes', randomUUID());
        for (const sub of ['sub-1', 'sub-2', 'sub-1', 'sub-2']) await h(e, ctx(sub));
        expect(seen).toEqual(['sub-1', 'sub-2']);
        expect(h.stats().skipped).toBe(2);
      });
    });
  });
}
