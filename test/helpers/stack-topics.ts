/**
 * Transports and topics a test file opens on the shared stack, closed and deleted after its tests,
 * and one-off calls of a raw kafkajs admin client (what an operator's `kafka-topics` does: add
 * partitions, delete records, delete a topic and create it again).
 */
import { afterAll } from 'vitest';
import type { Transport, TransportRecord } from '../../src/transport/index.js';
import type { KafkaTransportInput } from '../../src/transport/index.js';
import { rawKafka } from '../integration/consumer/members.js';
import { transportOn } from './kafka-client.js';
import type { KafkaClient } from './kafka-client.js';
import { stackEnv, uniqueName } from './stack.js';
import { waitFor } from './wait.js';

type RawAdmin = ReturnType<ReturnType<typeof rawKafka>['admin']>;

export interface StackTopics {
  /** A transport on `client` to the stack's brokers with `input`, closed after the file's tests. */
  transport(input: Omit<KafkaTransportInput, 'brokers'>): Transport;
  /** A topic named after `tag` (unique), created on `t` with `partitions` (1 h retention, delete policy); deleted after the file's tests. */
  topic(t: Transport, tag: string, partitions: number): Promise<string>;
}

/**
 * What {@link StackTopics} opens for the tests of one `describe` on `client`: registers the
 * `afterAll` that closes its transports and deletes its topics (a topic already gone is no error).
 */
export function stackTopics(client: KafkaClient): StackTopics {
  const brokers = stackEnv().kafkaBrokers;
  const transports: Transport[] = [];
  const topics: string[] = [];
  afterAll(async () => {
    await Promise.allSettled(transports.map((t) => t.close()));
    await withRawAdmin((admin) => admin.deleteTopics({ topics })).catch(() => undefined);
  });
  return {
    transport(input) {
      const t = transportOn({ brokers, ...input }, client);
      transports.push(t);
      return t;
    },
    async topic(t, tag, partitions) {
      const topic = uniqueName(tag);
      topics.push(topic);
      await t.ensureTopics([{ name: topic, partitions, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      return topic;
    },
  };
}

/** `fn` with a connected raw kafkajs admin client, disconnected afterwards whatever `fn` did. */
export async function withRawAdmin<T>(fn: (admin: RawAdmin) => Promise<T>): Promise<T> {
  const admin = rawKafka().admin();
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

/**
 * Writes `value` on `partition` of `topic` with a raw kafkajs producer of its own (another
 * service's, say), resolving once the broker acknowledged it there. kafkajs's producer leaves out,
 * without an error, a record naming a partition its metadata does not list — and a broker answers
 * metadata from a cache that takes up partitions just added (`createPartitions`) a moment after the
 * call returned: the send resolved with nothing written, and the test then waited for a record that
 * never came. So a send that names no write of `partition` is made again on a new producer (which
 * asks for metadata afresh; nothing was sent), for up to `timeoutMs`; any failure of a send is thrown
 * as it is (a send that failed may have been written: not repeated).
 */
export async function rawProduce(topic: string, partition: number, value: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    const producer = rawKafka().producer();
    await producer.connect();
    try {
      const written = await producer.send({ topic, messages: [{ partition, value }] });
      if (written.some((w) => w.partition === partition)) return;
    } finally {
      await producer.disconnect();
    }
    if (Date.now() > deadline) throw new Error(`${topic}: partition ${partition} was not in the producer's metadata after ${attempt} sends over ${timeoutMs} ms; nothing was written`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Deletes `topic` and creates it again with `partitions` (what an operator does to shrink a topic:
 * Kafka cannot take partitions away), resolving once it has leaders. A create refused while the
 * deletion is still going on is tried again. A create that timed out (a loaded CI broker answers
 * REQUEST_TIMED_OUT, or kafkajs's wait for leaders gives up) may still have created the topic, after
 * which every later create answers that it exists: an "exists" answer counts as done once the
 * topic has `partitions` partitions, each with a leader. The stack runs KRaft, whose controller
 * removes a deleted topic from its metadata before answering the deletion — but a broker answers
 * metadata from its own cache, which takes the deletion up a moment later: until it does, the old
 * topic is still listed (and kafkajs's wait for leaders is met by the old topic's). So the creation
 * starts once the broker no longer lists the topic; a topic it lists after that is the one created here.
 */
export async function recreateTopic(topic: string, partitions: number): Promise<void> {
  await withRawAdmin(async (admin) => {
    await admin.deleteTopics({ topics: [topic], timeout: 30_000 });
    await waitFor(`${topic} no longer listed after its deletion`, async () => !(await admin.listTopics()).includes(topic), 30_000, 100);
    let last: unknown = 'createTopics answered that the topic exists';
    // Bounded both ways: a stuck re-creation fails here with what the broker said, not as a test timeout.
    for (let attempt = 0; attempt < 200; attempt++) {
      try {
        if (await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true, timeout: 30_000 })) return;
        last = 'createTopics answered that the topic exists';
      } catch (err) {
        last = err;
      }
      if (await hasLeadersOnEvery(admin, topic, partitions)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${topic} could not be created again with ${partitions} partitions after its deletion: ${last instanceof Error ? last.message : String(last)}`);
  });
}

/**
 * Creates `topic` with `partitions` on `admin` and resolves once the broker lists it with that many
 * partitions, each with a leader. Not kafkajs's `waitForLeaders` (its default): that retries only
 * LEADER_NOT_AVAILABLE, and a KRaft broker answers the metadata of a topic it has just created with
 * UNKNOWN_TOPIC_OR_PARTITION for a moment, which failed the creation although the topic was made.
 */
export async function createTopicWithLeaders(admin: RawAdmin, topic: string, partitions: number): Promise<void> {
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: false, timeout: 30_000 });
  await waitFor(`${topic} listed with ${partitions} partitions, each with a leader`, () => hasLeadersOnEvery(admin, topic, partitions), 30_000, 100);
}

/** Whether the broker lists `topic` with exactly `partitions` partitions, each with a leader (false when it cannot say). */
async function hasLeadersOnEvery(admin: RawAdmin, topic: string, partitions: number): Promise<boolean> {
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const listed = topics.find((t) => t.name === topic)?.partitions ?? [];
    return listed.length === partitions && listed.every((p) => p.leader >= 0);
  } catch {
    return false;
  }
}

/** A record handler that notes each record as `describe(record)` in `handled`, in the order they come. */
export function recordsNoted(describe: (r: TransportRecord, value: string) => string): { handled: string[]; handler: (r: TransportRecord) => Promise<void> } {
  const handled: string[] = [];
  const handler = (r: TransportRecord): Promise<void> => {
    handled.push(describe(r, Buffer.from(r.value ?? new Uint8Array()).toString()));
    return Promise.resolve();
  };
  return { handled, handler };
}
