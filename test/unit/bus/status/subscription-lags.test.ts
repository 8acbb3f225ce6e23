/**
 * subscriptionLags (the lag gauge's one pass over every subscription, in-memory transport): each
 * group's lag is what subscriptionLag (the status) answers; end offsets are read once per topic
 * however many groups read it; a topic that does not exist is left out; one group's failing read
 * leaves out that group only; once the budget's signal aborts the answer comes without waiting for
 * a read that never ends, with the groups before it whole even when a topic's end offsets never
 * come; and a scrape after one cut short reads the groups it missed first (missedFirst).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { missedFirst, subscriptionLag, subscriptionLags } from '../../../../src/bus/status/index.js';
import type { LagTarget } from '../../../../src/bus/status/index.js';
import { GatewayError } from '../../../../src/core/errors.js';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { Transport } from '../../../../src/transport/index.js';

const a = 'sl.a';
const b = 'sl.b';
let transport: Transport;

beforeEach(async () => {
  transport = createMemoryTransport();
  await transport.ensureTopics([a, b].map((name) => ({ name, partitions: 2, retentionMs: -1, cleanupPolicy: 'delete' as const })));
  // Ends: a/0 at 3, a/1 at 1, b/0 at 2, b/1 at 0.
  await transport.produce(a, [0, 0, 0, 1].map((partition) => ({ key: null, value: new Uint8Array([1]), headers: [], partition })));
  await transport.produce(b, [0, 0].map((partition) => ({ key: null, value: new Uint8Array([1]), headers: [], partition })));
  await transport.commitOffsets('g1', a, [{ partition: 0, offset: 1n }, { partition: 1, offset: 1n }]);
  await transport.commitOffsets('g1', b, [{ partition: 0, offset: 0n }]);
  await transport.commitOffsets('g2', a, [{ partition: 0, offset: 3n }]);
  await transport.commitOffsets('g3', b, [{ partition: 0, offset: 1n }, { partition: 1, offset: 0n }]);
});

afterEach(async () => {
  await transport.close();
});

/** The transport, counting end-offset reads per topic; `committed` may replace a group's committed-offsets read. */
function watched(committed?: (group: string, topic: string) => Promise<never> | undefined): { source: Pick<Transport, 'endOffsets' | 'committedOffsets'>; ends: Map<string, number> } {
  const ends = new Map<string, number>();
  return {
    ends,
    source: {
      endOffsets: (topic) => {
        ends.set(topic, (ends.get(topic) ?? 0) + 1);
        return transport.endOffsets(topic);
      },
      committedOffsets: (group, topic) => committed?.(group, topic) ?? transport.committedOffsets(group, topic),
    },
  };
}

const targets: LagTarget[] = [
  { group: 'g1', topics: [a, b, 'sl.g1.retry'] }, // its retry topic was never made
  { group: 'g2', topics: [a], startAt: [{ topic: a, partition: 1, offset: 0n }] },
  { group: 'g3', topics: [b] },
];

describe('subscriptionLags', () => {
  it('answers each group as subscriptionLag does, reading each topic\'s end offsets once', async () => {
    const { source, ends } = watched();
    const got = await subscriptionLags(source, targets, { concurrency: 4 });
    expect([...got.keys()].sort()).toEqual(['g1', 'g2', 'g3']);
    expect(got.get('g1')).toEqual(await subscriptionLag(transport, 'g1', [a, b]));
    expect(got.get('g2')).toEqual(await subscriptionLag(transport, 'g2', [a], [{ topic: a, partition: 1, offset: 0n }]));
    expect(got.get('g3')).toEqual(await subscriptionLag(transport, 'g3', [b]));
    expect(got.get('g1')!.total).toBe(2 + 2); // a/0 3−1, a/1 1−1, b/0 2−0, b/1 nothing committed
    expect(got.get('g2')!.partitions.find((p) => p.partition === 1)).toEqual({ topic: a, partition: 1, endOffset: '1', committedOffset: null, startOffset: '0', lag: 1 });
    expect(Object.fromEntries(ends)).toEqual({ [a]: 1, [b]: 1, 'sl.g1.retry': 1 });
  });

  it('leaves out only the group whose read fails, and every group of a topic whose end offsets fail', async () => {
    const g2Fails = watched((group) => (group === 'g2' ? Promise.reject(new GatewayError('CEG_BROKER_UNAVAILABLE', 'down', { retriable: true })) : undefined));
    expect([...(await subscriptionLags(g2Fails.source, targets, { concurrency: 2 })).keys()].sort()).toEqual(['g1', 'g3']);

    const bFails: Pick<Transport, 'endOffsets' | 'committedOffsets'> = {
      endOffsets: (topic) => (topic === b ? Promise.reject(new GatewayError('CEG_BROKER_UNAVAILABLE', 'down', { retriable: true })) : transport.endOffsets(topic)),
      committedOffsets: (group, topic) => transport.committedOffsets(group, topic),
    };
    expect([...(await subscriptionLags(bFails, targets, { concurrency: 2 })).keys()]).toEqual(['g2']);
  });

  it('answers what is complete once the signal aborts, without waiting for a read that never ends', async () => {
    const ac = new AbortController();
    let g3Asked!: () => void;
    const asked = new Promise<void>((r) => (g3Asked = r));
    const { source } = watched((group) => {
      if (group !== 'g3') return undefined;
      g3Asked();
      return new Promise<never>(() => {}); // a broker that never answers
    });
    // One read at a time, in order: g1 and g2 are done when g3 is asked.
    const answer = subscriptionLags(source, targets, { concurrency: 1, signal: ac.signal });
    await asked;
    ac.abort();
    const got = await answer;
    expect([...got.keys()]).toEqual(['g1', 'g2']);
    expect(got.get('g2')?.total).toBe(1);
  });

  it('answers the groups before a topic whose end offsets never come, group by group in the order given', async () => {
    const ac = new AbortController();
    let bAsked!: () => void;
    const asked = new Promise<void>((r) => (bAsked = r));
    const source: Pick<Transport, 'endOffsets' | 'committedOffsets'> = {
      endOffsets: (topic) => {
        if (topic !== b) return transport.endOffsets(topic);
        bAsked();
        return new Promise<never>(() => {}); // a partition leader that never answers
      },
      committedOffsets: (group, topic) => transport.committedOffsets(group, topic),
    };
    // g2 reads only topic a: it is whole before g1 waits on b.
    const answer = subscriptionLags(source, [targets[1]!, targets[0]!, targets[2]!], { concurrency: 1, signal: ac.signal });
    await asked;
    ac.abort();
    const got = await answer;
    expect([...got.keys()]).toEqual(['g2']);
    expect(got.get('g2')).toEqual(await subscriptionLag(transport, 'g2', [a], [{ topic: a, partition: 1, offset: 0n }]));
  });

  it('a scrape cut short by its budget is followed by one that reads the groups it missed first', async () => {
    /** One scrape whose budget runs out when the `cutAt`-th group's committed offsets are asked. */
    const scrape = async (order: readonly LagTarget[], cutAt: number): Promise<string[]> => {
      const ac = new AbortController();
      let asks = 0;
      const { source } = watched(() => {
        if (++asks < cutAt) return undefined;
        ac.abort();
        return new Promise<never>(() => {});
      });
      return [...(await subscriptionLags(source, order, { concurrency: 1, signal: ac.signal })).keys()];
    };
    // Each scrape's budget runs out at its third committed-offsets read (one per topic here: g1 has two).
    const first = await scrape(targets, 3);
    expect(first).toEqual(['g1']);
    const missed = new Set(targets.map((t) => t.group).filter((g) => !first.includes(g)));
    const second = missedFirst(targets, missed);
    expect(second.map((t) => t.group)).toEqual(['g2', 'g3', 'g1']);
    expect(await scrape(second, 3)).toEqual(['g2', 'g3']);
    // Nothing missed: the order stays as given.
    expect(missedFirst(targets, new Set()).map((t) => t.group)).toEqual(['g1', 'g2', 'g3']);
  });
});
