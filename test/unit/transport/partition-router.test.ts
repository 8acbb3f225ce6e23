/**
 * PartitionRouter's cached partition count: `countCovering` asks the broker again when offsets
 * name a partition beyond the cached count (partitions added since), and only then.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PartitionRouter } from '../../../src/transport/partition-router.js';

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
