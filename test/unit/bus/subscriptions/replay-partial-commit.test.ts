/**
 * A replay of a subscription whose kinds live on two topics commits one topic after the other. When
 * the group got a member between the two commits (a process joining the group), the commit of the
 * second topic is refused and retried once the group is empty again — and the retry read the
 * group's positions anew, so the first topic's `from` was the offset the replay had just committed:
 * the report (and the audit entry) said 0 events for it although it was moved back. The positions
 * read before the first commit are kept for the retry.
 * (In-memory transport; the member is a real one of that transport, joined right after the first
 * topic's commit and stopped at the next read of the group's offsets.)
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitWhenIdle, planOf } from '../../../../src/bus/subscriptions/index.js';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { Consumption, PartitionOffset, Transport } from '../../../../src/transport/index.js';

const group = 'ce-gateway.sub.anonymous.two-topics';
const topics = ['pc.a', 'pc.b'];

let transport: Transport;

beforeEach(async () => {
  transport = createMemoryTransport();
  await transport.ensureTopics(topics.map((name) => ({ name, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' as const })));
  for (const t of topics) {
    await transport.produce(t, [0, 1, 2, 3].map(() => ({ key: null, value: new Uint8Array([1]), headers: [], partition: 0 })));
    await transport.commitOffsets(group, t, [{ partition: 0, offset: 4n }]);
  }
});

afterEach(async () => {
  await transport.close();
});

describe('a replay over two topics whose second commit must wait', () => {
  it('reports the first topic moved back from its position before the replay', async () => {
    const targets = new Map<string, readonly PartitionOffset[]>(topics.map((t) => [t, [{ partition: 0, offset: 0n }]]));
    let joined: Consumption | undefined;
    let joinedOnce = false;
    // The real transport, with a member joining the group right after the replay's commit of the first topic.
    const racing: Transport = new Proxy(transport, {
      get(target, prop, receiver) {
        if (prop === 'commitOffsets') {
          return async (g: string, topic: string, offsets: readonly PartitionOffset[]): Promise<void> => {
            await target.commitOffsets(g, topic, offsets);
            if (!joinedOnce && topic === topics[0] && offsets[0]?.offset === 0n) {
              joinedOnce = true;
              joined = await target.consume({ group, topics: [topics[1]!], startFrom: 'latest' }, async () => undefined);
            }
          };
        }
        if (prop === 'committedOffsets') {
          return async (g: string, topic: string) => {
            if (joined !== undefined) {
              const member = joined;
              joined = undefined;
              await member.stop();
            }
            return target.committedOffsets(g, topic);
          };
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const from = await commitWhenIdle(racing, group, targets, 'latest', 10_000);
    expect(joinedOnce).toBe(true);
    const plan = planOf(topics, from, targets);
    expect(plan.partitions).toEqual({ 'pc.a/0': { from: '4', to: '0', events: 4, skipped: 0 }, 'pc.b/0': { from: '4', to: '0', events: 4, skipped: 0 } });
    expect(plan.events).toBe(8);
    for (const t of topics) expect(await transport.committedOffsets(group, t)).toEqual([{ partition: 0, offset: 0n }]);
  });
});
