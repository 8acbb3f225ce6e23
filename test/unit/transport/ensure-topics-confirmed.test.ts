/**
 * `ensureTopics` resolves only once the broker's metadata shows every topic it created, or found
 * created a moment before by another client, with a leader on every partition
 * (src/transport/topic-leaders.ts). A broker answers CreateTopics before its metadata lists the
 * topic and before it leads the new partitions: on kafkajs the "topic already exists" path (another
 * gateway instance created the dead-letter topic a moment ago) returned at once while the "created"
 * path waited; on @platformatic/kafka the wait ended at the request timeout and returned as if the
 * topics were there. Now both wait the same way and, when the metadata never shows the topics so,
 * fail with a retriable error naming them. The adapters run on their real client classes pointed
 * at a closed port, with only the admin calls replaced: the broker's lag cannot be had on demand
 * (on the stack it lasts a moment after the change).
 */
import { Admin, ResponseError } from '@platformatic/kafka';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKafkaTransport, createPlatformaticTransport } from '../../../src/transport/index.js';
import type { TopicSpec, Transport } from '../../../src/transport/port.js';
import { kafkajs } from '../../../src/transport/kafka/kafkajs.js';
import { METADATA_CATCH_UP, metadataCatchUpAsks } from '../../../src/transport/metadata-catch-up.js';

const spec = (name: string, partitions = 2): TopicSpec => ({ name, partitions, retentionMs: -1, cleanupPolicy: 'delete' });
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const caught = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e);
const open: Transport[] = [];

afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  await Promise.allSettled(open.splice(0).map((t) => t.close()));
});

/** What the replaced metadata look-up answers at its i-th call (then the last one again): a topic's leaders, 'unknown' (not listed / UNKNOWN_TOPIC_OR_PARTITION). */
type Answer = readonly number[] | 'unknown';

/** Counts the metadata look-ups and whether one answered every partition led. */
interface Asked {
  looks: number;
  ledShown: boolean;
}

function next(answers: readonly Answer[], asked: Asked): Answer {
  const a = answers[Math.min(asked.looks, answers.length - 1)]!;
  asked.looks++;
  if (a !== 'unknown' && a.every((l) => l >= 0)) asked.ledShown = true;
  return a;
}

type KafkajsCreate = 'created' | 'exists-resolved-false' | 'exists-error';

/** The kafkajs adapter: topic `a` not listed; createTopics answers as `create` says; fetchTopicMetadata as `answers`. */
function kafkajsTransport(create: KafkajsCreate, answers: readonly Answer[], requestTimeoutMs?: number): { t: Transport; asked: Asked } {
  const k = kafkajs();
  const asked: Asked = { looks: 0, ledShown: false };
  // kafkajs's classes take the protocol table's entry (its types say string | Error).
  const protocol = (type: string, code: number): Error => new k.KafkaJSProtocolError({ type, code, retriable: true, message: type } as unknown as Error);
  const admin = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    listTopics: async () => [] as string[],
    createTopics: async (o: { topics: { topic: string }[] }) => {
      if (create === 'created') return true;
      if (create === 'exists-resolved-false') return false; // kafkajs: every topic existed already
      const { KafkaJSCreateTopicError } = k as unknown as { KafkaJSCreateTopicError: new (e: unknown, topic: string) => Error };
      throw new k.KafkaJSAggregateError('Topic creation errors', o.topics.map((x) => new KafkaJSCreateTopicError({ type: 'TOPIC_ALREADY_EXISTS', code: 36, retriable: false, message: 'exists' }, x.topic)));
    },
    fetchTopicMetadata: async ({ topics }: { topics: string[] }) => {
      const a = next(answers, asked);
      if (a === 'unknown') throw protocol('UNKNOWN_TOPIC_OR_PARTITION', 3);
      return { topics: topics.map((name) => ({ name, partitions: a.map((leader, partitionId) => ({ partitionId, leader, replicas: [1], isr: [1] })) })) };
    },
  };
  const producer = { connect: async () => undefined, disconnect: async () => undefined };
  vi.spyOn(k.Kafka.prototype, 'admin').mockImplementation(() => admin as never);
  vi.spyOn(k.Kafka.prototype, 'producer').mockImplementation(() => producer as never);
  const t = createKafkaTransport({ brokers: ['127.0.0.1:1'], logger: quiet, retries: 0, ...(requestTimeoutMs === undefined ? {} : { requestTimeoutMs }) });
  open.push(t);
  return { t, asked };
}

/** The @platformatic/kafka adapter the same way; createTopics succeeds or answers TOPIC_ALREADY_EXISTS. */
function platformaticTransport(exists: boolean, answers: readonly Answer[], requestTimeoutMs?: number): { t: Transport; asked: Asked } {
  const asked: Asked = { looks: 0, ledShown: false };
  vi.spyOn(Admin.prototype, 'listTopics').mockImplementation((async () => []));
  vi.spyOn(Admin.prototype, 'createTopics').mockImplementation((async () => {
    if (exists) throw new ResponseError(19, 7, { '/topics/0': [36, 'Topic already exists'] }, {});
    return [];
  }));
  vi.spyOn(Admin.prototype, 'metadata').mockImplementation((async ({ topics }: { topics: string[] }) => {
    const a = next(answers, asked);
    return { brokers: new Map(), topics: new Map(a === 'unknown' ? [] : topics.map((name) => [name, { id: name, partitionsCount: a.length, partitions: a.map((leader) => ({ leader, leaderEpoch: 0, replicas: [1], isr: [1], offlineReplicas: [] })) }])) };
  }) as never);
  const t = createPlatformaticTransport({ brokers: ['127.0.0.1:1'], logger: quiet, retries: 0, ...(requestTimeoutMs === undefined ? {} : { requestTimeoutMs }) });
  open.push(t);
  return { t, asked };
}

/** Not listed, then listed without leaders, then led: the broker's answers right after a CreateTopics. */
const LAGGING: readonly Answer[] = ['unknown', [-1, -1], [1, -1], [1, 1]];
const NEVER_LED: readonly Answer[] = [[1, -1]];

describe('kafkajs ensureTopics', () => {
  it.each<KafkajsCreate>(['exists-resolved-false', 'exists-error', 'created'])('%s: resolves only after the metadata showed every partition with a leader', async (create) => {
    const { t, asked } = kafkajsTransport(create, LAGGING);
    await t.ensureTopics([spec('a')]);
    expect(asked.ledShown).toBe(true);
    expect(asked.looks).toBe(4);
  });

  it('a topic whose partitions never all get a leader: a retriable CEG_BROKER_UNAVAILABLE naming it, not a silent success', async () => {
    vi.useFakeTimers();
    const { t, asked } = kafkajsTransport('exists-resolved-false', NEVER_LED, 5_000);
    const outcome = caught(t.ensureTopics([spec('a')]));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await outcome).toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE', retriable: true, details: { operation: 'ensureTopics', topics: ['a'], leadersNotConfirmed: true } });
    expect(asked.looks).toBeGreaterThan(3);
    // Not confirmed, not remembered as there: the next call asks the broker again.
    const looks = asked.looks;
    const again = caught(t.ensureTopics([spec('a')]));
    await vi.advanceTimersByTimeAsync(60_000);
    await again;
    expect(asked.looks).toBeGreaterThan(looks);
  });
});

describe('@platformatic/kafka ensureTopics', () => {
  it.each([true, false])('topic already existing %s: resolves only after the metadata showed every partition with a leader', async (exists) => {
    const { t, asked } = platformaticTransport(exists, LAGGING);
    await t.ensureTopics([spec('a')]);
    expect(asked.ledShown).toBe(true);
    expect(asked.looks).toBe(4);
  });

  it('a topic whose partitions never all get a leader: a retriable CEG_BROKER_UNAVAILABLE naming it, not a silent success', async () => {
    vi.useFakeTimers();
    const { t, asked } = platformaticTransport(false, NEVER_LED, 5_000);
    const outcome = caught(t.ensureTopics([spec('a'), spec('b')]));
    await vi.advanceTimersByTimeAsync(60_000);
    const err = await outcome;
    expect(err).toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE', retriable: true, details: { operation: 'ensureTopics', topics: ['a', 'b'], leadersNotConfirmed: true } });
    expect(String((err as Error).message)).toContain('a, b');
    expect(asked.looks).toBeGreaterThan(3);
  });
});

describe('metadataCatchUpAsks', () => {
  it("METADATA_CATCH_UP's six asks at least; then one more per 1,600 ms that fits", () => {
    expect(metadataCatchUpAsks(0)).toBe(METADATA_CATCH_UP.maxAttempts);
    expect(metadataCatchUpAsks(3_100)).toBe(6); // 100 + 200 + 400 + 800 + 1,600
    expect(metadataCatchUpAsks(4_699)).toBe(6);
    expect(metadataCatchUpAsks(4_700)).toBe(7);
    expect(metadataCatchUpAsks(30_000)).toBe(22); // 3,100 + 16 · 1,600 = 28,700 ms
  });
});
