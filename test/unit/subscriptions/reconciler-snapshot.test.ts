/**
 * The reconciler (src/bus/subscriptions/reconciler.ts) starts members from the desired set as it
 * is when each start begins, not as it was when the pass began: a pass waits (member starts in
 * flight, at most `concurrency` at once; the work check), and a subscription paused or deleted
 * meanwhile was still started (breaker report: another gateway started a paused subscription's
 * member for seconds). A fake host, so the pass can be held at a known point; no Kafka here — the
 * same reconciler runs the Kafka tests of test/integration/subscriptions.
 */
import { describe, expect, it } from 'vitest';
import type { Subscription, SubscriptionStats } from '../../../src/bus/subscriber/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { Reconciler } from '../../../src/bus/subscriptions/index.js';
import type { RunSpec, SubscribeHost } from '../../../src/bus/subscriptions/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { unknownTopic } from '../../../src/transport/topics.js';
import { waitFor } from '../../helpers/wait.js';

const ZERO: SubscriptionStats = { handled: 0, retried: 0, deadLettered: 0, skipped: 0, filtered: 0, duplicates: 0, rebalances: 0, lost: 0 };

function fakeSubscription(name: string): Subscription {
  let stop!: () => void;
  const done = new Promise<void>((r) => (stop = r));
  return {
    name,
    done,
    stats: () => ZERO,
    activity: () => ({}),
    topics: ['t'],
    deadLetterTopic: `${name}.dlq`,
    assignments: () => [],
    setFilters: () => undefined,
    unsubscribe: () => {
      stop();
      return done;
    },
    [Symbol.asyncDispose]: () => done,
  };
}

const spec = (group: string, state: RunSpec['state'] = 'active'): RunSpec => ({
  group,
  kinds: ['K'],
  filters: [],
  ordering: 'key',
  retry: { maxAttempts: 3, backoff: { initialMs: 100, factor: 2, maxMs: 1000, jitter: 0 } },
  startFrom: 'latest',
  state,
  concurrency: 4,
});

describe('a reconciler pass', () => {
  it('does not start a member of a subscription paused or deleted while the pass waited; a changed one starts as it is now', async () => {
    // The first 16 starts (the pass's concurrency) hang until released; the others wait for a place.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started: RunSpec[] = [];
    const host: SubscribeHost = {
      subscribe: async (o) => {
        started.push(o as unknown as RunSpec);
        if (started.length <= 16) await gate;
        return fakeSubscription(o.subscription);
      },
      // A missing topic as the transports say it (details.topicMissing: transport/topics.ts unknownTopic).
      partitionCount: (topic) => (topic === 't' ? Promise.resolve(1) : Promise.reject(unknownTopic(topic))),
      topicsOf: () => ['t'],
    };
    const r = new Reconciler<RunSpec>(host, () => ({ handler: () => undefined, update: () => undefined, close: () => Promise.resolve() }), silentLogger(), () => Promise.resolve());
    const groups = Array.from({ length: 19 }, (_, i) => `g${String(i).padStart(2, '0')}`);
    r.apply(new Map(groups.map((g) => [g, spec(g)])));
    // The pass starts them asynchronously (a partition-count look-up first): waited for, not slept
    // for (a 50 ms sleep failed in a CI run on a loaded machine); the 17th waits for a place.
    await waitFor('the first 16 starts', () => started.length >= 16, 10_000, 5);
    expect(started).toHaveLength(16);
    // While the pass waits: g16 is paused, g17 deleted, g18 changed (concurrency 9).
    const now = new Map(groups.filter((g) => g !== 'g17').map((g) => [g, g === 'g16' ? spec(g, 'paused') : g === 'g18' ? { ...spec(g), concurrency: 9 } : spec(g)]));
    r.apply(now);
    release();
    await r.settled();
    const names = started.map((o) => (o as unknown as { subscription: string }).subscription);
    expect(names).not.toContain('g16');
    expect(names).not.toContain('g17');
    expect(names.filter((n) => n === 'g18')).toHaveLength(1);
    expect((started.find((o) => (o as unknown as { subscription: string }).subscription === 'g18') as unknown as { inFlightPerPartition: number }).inFlightPerPartition).toBe(9);
    expect([...r.running().keys()].sort()).toEqual(groups.filter((g) => g !== 'g16' && g !== 'g17'));
    await r.stop();
  });
});

describe('a subscription whose member failed to start', () => {
  it('keeps no backoff once it is deleted or paused (it stayed for the life of the process)', async () => {
    let fail = true;
    const host: SubscribeHost = {
      subscribe: (o) => (fail ? Promise.reject(new GatewayError('CEG_BROKER_UNAVAILABLE', 'injected', { retriable: true })) : Promise.resolve(fakeSubscription(o.subscription))),
      partitionCount: () => Promise.resolve(1),
      topicsOf: () => ['t'],
    };
    const r = new Reconciler<RunSpec>(host, () => ({ handler: () => undefined, update: () => undefined, close: () => Promise.resolve() }), silentLogger(), () => Promise.resolve());
    const groups = Array.from({ length: 20 }, (_, i) => `gone-${i}`);
    r.apply(new Map([...groups.map((g) => [g, spec(g)] as const), ['paused', spec('paused')], ['kept', spec('kept')]]));
    await r.settled();
    expect(r.backingOff()).toBe(22);
    // 20 deleted, one paused, one still active (and still failing).
    r.apply(new Map([['paused', spec('paused', 'paused')], ['kept', spec('kept')]]));
    await r.settled();
    expect(r.backingOff()).toBe(1);
    fail = false;
    await r.stop();
  });
});
