/**
 * kafkajs adapter: a group-less read (console live tail, `ce-gateway tail` / `trace`, pull streams,
 * the definitions-store follower) looks up its start positions on the transport's retried offset
 * look-up (kafka-transport.ts #oneAtATime, METADATA_CATCH_UP): a broker that does not lead a
 * partition yet — right after partitions were added or a leader moved — is asked again, as for a
 * member's start positions, instead of failing the read at once. Runs on kafkajs's real client
 * class pointed at a closed port, with the admin and the read's consumer replaced (the broker's
 * answer cannot be had on demand: on the stack it lasts a moment after the change).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKafkaTransport } from '../../../src/transport/index.js';
import type { ReadStart, Transport } from '../../../src/transport/port.js';
import { kafkajs } from '../../../src/transport/kafka/kafkajs.js';

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const open: Transport[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.allSettled(open.splice(0).map((t) => t.close()));
});

/** kafkajs's failure for a broker answer of `type` (code `code`), as its admin's look-ups reject with it. */
function brokerAnswer(type: string, code: number, retriable: boolean): Error {
  // kafkajs's class takes the protocol table's entry (its types say string | Error).
  return new (kafkajs().KafkaJSProtocolError)({ type, code, retriable, message: `broker said ${type}` } as unknown as Error);
}

/**
 * The kafkajs adapter on an admin whose topic `t` has partitions 0 (log 2..5) and 1 (0..7), whose
 * fetchTopicOffsets and fetchTopicOffsetsByTimestamp each fail with `failures[i]` at their i-th
 * call; the read's consumer records where it is told to seek when it joins.
 */
function transportWith(failures: readonly (Error | undefined)[]): { t: Transport; asked: () => number; join: () => { partition: number; offset: string }[] } {
  const k = kafkajs();
  let asked = 0;
  const fail = (): void => {
    const failure = failures[asked++];
    if (failure !== undefined) throw failure;
  };
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    listTopics: async () => ['t'],
    deleteGroups: async () => [],
    fetchTopicOffsets: async () => {
      fail();
      return [
        { partition: 1, offset: '7', high: '7', low: '0' },
        { partition: 0, offset: '5', high: '5', low: '2' },
      ];
    },
    fetchTopicOffsetsByTimestamp: async () => {
      fail();
      return [
        { partition: 0, offset: '3' },
        { partition: 1, offset: '-1' },
      ];
    },
  };
  const listeners = new Map<string, () => void>();
  const seeks: { partition: number; offset: string }[] = [];
  const consumer = {
    events: { GROUP_JOIN: 'join', END_BATCH_PROCESS: 'end' },
    on: (event: string, fn: () => void) => void listeners.set(event, fn),
    connect: async () => undefined,
    subscribe: async () => undefined,
    run: async () => undefined,
    disconnect: async () => undefined,
    seek: ({ partition, offset }: { partition: number; offset: string }) => void seeks.push({ partition, offset }),
  };
  vi.spyOn(k.Kafka.prototype, 'admin').mockImplementation(() => admin as never);
  vi.spyOn(k.Kafka.prototype, 'consumer').mockImplementation(() => consumer as never);
  const t = createKafkaTransport({ brokers: ['127.0.0.1:1'], logger: quiet, retries: 0 });
  open.push(t);
  const join = (): { partition: number; offset: string }[] => {
    listeners.get('join')?.();
    return [...seeks].sort((a, b) => a.partition - b.partition);
  };
  return { t, asked: () => asked, join };
}

describe('kafkajs read: start positions while the broker does not lead a partition yet', () => {
  const cases: [string, ReadStart, { partition: number; offset: string }[]][] = [
    ['earliest', { kind: 'earliest' }, [{ partition: 0, offset: '2' }, { partition: 1, offset: '0' }]],
    ['latest', { kind: 'latest' }, [{ partition: 0, offset: '5' }, { partition: 1, offset: '7' }]],
    // The look-up by time meets the lag too (its own ask, after the end offsets).
    ['timestamp', { kind: 'timestamp', timestampMs: 1_000 }, [{ partition: 0, offset: '3' }, { partition: 1, offset: '7' }]],
  ];
  it.each(cases)('a follow read from %s starts where the broker says once it answers', async (_name, from, expected) => {
    const failures = from.kind === 'timestamp' ? [brokerAnswer('NOT_LEADER_FOR_PARTITION', 6, true), undefined, brokerAnswer('LEADER_NOT_AVAILABLE', 5, true)] : [brokerAnswer('NOT_LEADER_FOR_PARTITION', 6, true), brokerAnswer('LEADER_NOT_AVAILABLE', 5, true)];
    const { t, asked, join } = transportWith(failures);
    const read = await t.read({ topics: ['t'], from }, async () => undefined);
    expect(join()).toEqual(expected);
    expect(asked()).toBe(from.kind === 'timestamp' ? 4 : 3);
    await read.stop();
  });

  it('other failures still fail the read at once', async () => {
    const { t, asked } = transportWith([brokerAnswer('TOPIC_AUTHORIZATION_FAILED', 29, false)]);
    await expect(t.read({ topics: ['t'], from: { kind: 'earliest' } }, async () => undefined)).rejects.toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE', retriable: false });
    expect(asked()).toBe(1);
  });
});
