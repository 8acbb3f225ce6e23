/**
 * kafkajs adapter: a topic offset look-up (end offsets, a replay's offsets, a member's start
 * positions) that the broker answers with NOT_LEADER_OR_FOLLOWER (kafkajs: NOT_LEADER_FOR_PARTITION)
 * or a kin is asked again for a while, as Kafka's own clients do, instead of failing at once:
 * right after `kafka-topics --alter --partitions` a broker lists the new partitions with itself as
 * leader before it has taken up their leadership (a member started then failed: added-partitions,
 * kafkajs). Other failures still fail at once. The adapter runs on kafkajs's real client class
 * pointed at a closed port, with only the admin calls replaced (the broker's answer cannot be had
 * on demand: on the stack it lasts a moment after the change).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKafkaTransport } from '../../../src/transport/index.js';
import type { Transport } from '../../../src/transport/port.js';
import { kafkajs } from '../../../src/transport/kafka/kafkajs.js';

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const open: Transport[] = [];

afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  await Promise.allSettled(open.splice(0).map((t) => t.close()));
});

/** kafkajs's failure for a broker answer of `type` (code `code`), as its admin's fetchTopicOffsets rejects with it (bail: the protocol error itself). */
function brokerAnswer(type: string, code: number, retriable: boolean): Error {
  // kafkajs's class takes the protocol table's entry (its types say string | Error).
  return new (kafkajs().KafkaJSProtocolError)({ type, code, retriable, message: `broker said ${type}` } as unknown as Error);
}

/**
 * The kafkajs adapter on an admin whose topic `t` has 2 partitions and whose fetchTopicOffsets
 * fails with `failures[i]` at its i-th call (then answers offsets 5 and 7).
 */
function transportWith(failures: readonly Error[]): { t: Transport; asked: () => number } {
  const k = kafkajs();
  let asked = 0;
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    listTopics: async () => ['t'],
    fetchTopicMetadata: async () => ({ topics: [{ name: 't', partitions: [0, 1].map((p) => ({ partitionId: p, leader: 1, replicas: [1], isr: [1] })) }] }),
    fetchTopicOffsets: async () => {
      const failure = failures[asked++];
      if (failure !== undefined) throw failure;
      return [
        { partition: 1, offset: '7', high: '7', low: '0' },
        { partition: 0, offset: '5', high: '5', low: '2' },
      ];
    },
  };
  vi.spyOn(k.Kafka.prototype, 'admin').mockImplementation(() => admin as never);
  const t = createKafkaTransport({ brokers: ['127.0.0.1:1'], logger: quiet, retries: 0 });
  open.push(t);
  return { t, asked: () => asked };
}

describe('kafkajs adapter: a broker that does not lead a partition yet', () => {
  it('is asked again until it answers: end offsets and offsets at the log start come out whole', async () => {
    const notLeader = (): Error => brokerAnswer('NOT_LEADER_FOR_PARTITION', 6, true);
    const ends = transportWith([notLeader(), brokerAnswer('LEADER_NOT_AVAILABLE', 5, true)]);
    expect(await ends.t.endOffsets('t')).toEqual([{ partition: 0, offset: 5n }, { partition: 1, offset: 7n }]);
    expect(ends.asked()).toBe(3);
    vi.restoreAllMocks();

    const starts = transportWith([notLeader()]);
    expect(await starts.t.offsetsAt('t', { kind: 'earliest' })).toEqual([{ partition: 0, offset: 2n }, { partition: 1, offset: 0n }]);
    expect(starts.asked()).toBe(2);
  });

  it('gives up after a few seconds with a retriable error, asking with pauses that double (not in a tight loop)', async () => {
    vi.useFakeTimers();
    const { t, asked } = transportWith(Array.from({ length: 1_000 }, () => brokerAnswer('NOT_LEADER_FOR_PARTITION', 6, true)));
    const outcome = t.endOffsets('t').then(() => undefined, (e: unknown) => e);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await outcome).toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE', retriable: true });
    expect(asked()).toBeGreaterThan(2);
    expect(asked()).toBeLessThan(10); // 100, 200, 400, 800, 1,600 ms … within 3 s
  });

  it('does not ask again on other failures', async () => {
    const { t, asked } = transportWith([brokerAnswer('TOPIC_AUTHORIZATION_FAILED', 29, false)]);
    await expect(t.endOffsets('t')).rejects.toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE', retriable: false });
    expect(asked()).toBe(1);
  });
});
