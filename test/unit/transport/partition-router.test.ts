/**
 * PartitionRouter's cached partition count: `countCovering` asks the broker again when offsets
 * name a partition beyond the cached count (partitions added since), and only then.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { retryPolicy } from '../../../src/core/retry.js';
import { PartitionRouter } from '../../../src/transport/partition-router.js';
import { partitionForKey } from '../../../src/transport/partitioner.js';

describe('PartitionRouter.countCovering', () => {
  it('keeps the cached count for partitions below it', async () => {
    const router = new PartitionRouter(60_000);
    const answers = [2, 4];
    let asked = 0;
    const lookup = async (): Promise<number> => answers[asked++]!;
    expect(await router.count('t', lookup)).toBe(2);
    expect(await router.countCovering('t', [0, 1], lookup)).toBe(2);
    expect(asked).toBe(1);
  });

  it('looks the count up again for a partition beyond the cached one, and caches the answer', async () => {
    const router = new PartitionRouter(60_000);
    const answers = [2, 4];
    let asked = 0;
    const lookup = async (): Promise<number> => answers[asked++]!;
    expect(await router.count('t', lookup)).toBe(2);
    expect(await router.countCovering('t', [0, 3], lookup)).toBe(4);
    expect(await router.count('t', lookup)).toBe(4);
    expect(asked).toBe(2);
  });

  it('keeps asking while the broker answer lags behind partitions just added (the default METADATA_CATCH_UP policy)', async () => {
    const router = new PartitionRouter(60_000);
    const answers = [2, 2, 2, 4]; // the broker's metadata cache takes up the added partitions a moment late
    let asked = 0;
    const lookup = async (): Promise<number> => answers[asked++]!;
    expect(await router.count('t', lookup)).toBe(2);
    expect(await router.countCovering('t', [3], lookup)).toBe(4);
    expect(asked).toBe(4);
  });

  it('gives up when its cover retry policy is used up, with the last answer, so the caller refuses a partition the topic does not have', async () => {
    vi.useFakeTimers();
    try {
      // Four asks, 100, 200 and 400 ms apart: the last at 700 ms.
      const router = new PartitionRouter(60_000, retryPolicy({ maxAttempts: 4, initialDelayMs: 100, factor: 2, maxDelayMs: 400, jitter: 0 }));
      let asked = 0;
      const lookup = async (): Promise<number> => (asked++, 2);
      const covering = router.countCovering('t', [5], lookup);
      await vi.advanceTimersByTimeAsync(999);
      const askedBefore = asked;
      await vi.advanceTimersByTimeAsync(200);
      expect(await covering).toBe(2);
      expect(askedBefore).toBeGreaterThan(2); // asked again after 100, 200, 400 ms …
      expect(asked).toBeLessThan(8); // … with pauses that double, not in a tight loop
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not wait for a partition no topic can have (not a safe integer)', async () => {
    const router = new PartitionRouter(60_000);
    let asked = 0;
    const lookup = async (): Promise<number> => (asked++, 2);
    expect(await router.countCovering('t', [Number.POSITIVE_INFINITY], lookup)).toBe(2);
    expect(asked).toBe(1);
  });
});

describe('PartitionRouter.countForRecords', () => {
  const record = (partition?: number) => ({ key: null, value: null, headers: [], ...(partition === undefined ? {} : { partition }) });

  it('keeps the cached count for keyed records and explicit partitions below it', async () => {
    const router = new PartitionRouter(60_000);
    const answers = [2, 4];
    let asked = 0;
    const lookup = async (): Promise<number> => answers[asked++]!;
    expect(await router.countForRecords('t', [record(), record(1)], lookup)).toBe(2);
    expect(await router.countForRecords('t', [record(0), record()], lookup)).toBe(2);
    expect(asked).toBe(1);
  });

  it('asks again when a record names a partition not below the cached count', async () => {
    const router = new PartitionRouter(60_000);
    const answers = [2, 4];
    let asked = 0;
    const lookup = async (): Promise<number> => answers[asked++]!;
    expect(await router.countForRecords('t', [record(0)], lookup)).toBe(2);
    expect(await router.countForRecords('t', [record(0), record(3), record(1)], lookup)).toBe(4);
    expect(asked).toBe(2);
  });
});

describe('PartitionRouter bounds', () => {
  afterEach(() => void vi.useRealTimers());

  it('drops counts (and round-robin positions) of topics not written for maxAgeMs: a long-running gateway does not keep every topic it ever wrote to', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const router = new PartitionRouter(60_000);
    const lookup = async (): Promise<number> => 3;
    for (let i = 0; i < 500; i++) {
      const topic = `ce-gateway.sub.anonymous.gone-${i}.dlq`;
      await router.count(topic, lookup);
      router.partitionOf(topic, { key: null, value: null, headers: [] }, 0, 3);
    }
    expect(router.size).toBe(500);
    vi.setSystemTime(1_000_000 + 60_001);
    await router.count('live', lookup);
    expect(router.size).toBe(1);
  });
});

describe('PartitionRouter.recount and sendRouted (a topic created again with fewer partitions)', () => {
  const keyed = (k: string) => ({ key: new TextEncoder().encode(k), value: null, headers: [] });

  it('sends refused together make one look-up; a later refusal of the old count takes the new count without asking', async () => {
    const router = new PartitionRouter(60_000);
    let asked = 0;
    let answer!: (n: number) => void;
    const lookup = (): Promise<number> => {
      asked++;
      return new Promise<number>((r) => (answer = r));
    };
    const first = router.count('t', () => Promise.resolve(6));
    expect(await first).toBe(6);
    const refused = [router.recount('t', 6, lookup), router.recount('t', 6, lookup), router.recount('t', 6, lookup)];
    answer(2);
    expect(await Promise.all(refused)).toEqual([2, 2, 2]);
    expect(await router.recount('t', 6, lookup)).toBe(2);
    expect(asked).toBe(1);
  });

  it('routes again over the new count once when the send is refused beyond the topic; keys go to murmur2 mod the new count', async () => {
    const router = new PartitionRouter(60_000);
    const count = await router.count('t', () => Promise.resolve(6));
    const records = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map(keyed);
    const tried: number[][] = [];
    const beyond = new Error('beyond');
    const sent = await router.sendRouted('t', records, count, () => Promise.resolve(2), (partitionOf) => {
      const partitions = records.map((r, i) => partitionOf(r, i));
      tried.push(partitions);
      return partitions.some((p) => p >= 2) ? Promise.reject(beyond) : Promise.resolve(partitions);
    }, (err) => err === beyond);
    expect(tried).toHaveLength(2);
    expect(tried[0]).toEqual(records.map((r) => partitionForKey(r.key, 6)));
    expect(sent).toEqual(records.map((r) => partitionForKey(r.key, 2)));
  });

  it('throws the first refusal when the count did not change, or cannot be asked (an unknown topic stays that)', async () => {
    const router = new PartitionRouter(60_000);
    const count = await router.count('t', () => Promise.resolve(2));
    const refusal = new Error('refused');
    let sends = 0;
    const send = (): Promise<never> => {
      sends++;
      return Promise.reject(refusal);
    };
    await expect(router.sendRouted('t', [keyed('a')], count, () => Promise.resolve(2), send, () => true)).rejects.toBe(refusal);
    await expect(router.sendRouted('t', [keyed('a')], count, () => Promise.reject(new Error('unknown topic')), send, () => true)).rejects.toBe(refusal);
    expect(sends).toBe(2);
  });
});
