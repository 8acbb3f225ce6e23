/**
 * Partitions added to a topic a consumer group reads (`kafka-topics --alter --partitions`), on both
 * Kafka clients (breaker, 2026-12-06): a running member (what runs a push subscription) never took
 * up the new partitions — on @platformatic/kafka not at all, on kafkajs after its 5-minute metadata
 * refresh, and then at `latest` — and a member started later on a group without a commit there
 * started at `latest` too: the records written there in between were never delivered.
 * Now a running member sees the new partitions at its metadata refresh (`metadataMaxAgeMs`, here
 * shortened) and the group rebalances; a partition of a topic the group read before that has no
 * commit starts at its log start, whether a running member or a new one takes it up.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Transport, TransportRecord } from '../../src/transport/index.js';
import { KAFKA_CLIENTS, transportOn } from '../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { rawKafka } from './consumer/members.js';

describe.each(KAFKA_CLIENTS)('partitions added to a topic a group reads (%s)', (client) => {
  const brokers = stackEnv().kafkaBrokers;
  const transports: Transport[] = [];
  const topics: string[] = [];
  afterAll(async () => {
    await Promise.allSettled(transports.map((t) => t.close()));
    const admin = rawKafka().admin();
    await admin.connect();
    await admin.deleteTopics({ topics }).catch(() => undefined);
    await admin.disconnect();
  });

  /** A topic of 2 partitions, a transport refreshing its metadata every `metadataMaxAgeMs`, and a way to grow the topic to 4 and write on partition 3 (a producer of its own). */
  async function setup(metadataMaxAgeMs: number) {
    const t = transportOn({ brokers, clientId: uniqueName(`added-${client}`), metadataMaxAgeMs }, client);
    transports.push(t);
    const topic = uniqueName(`it-added-${client}`);
    topics.push(topic);
    await t.ensureTopics([{ name: topic, partitions: 2, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
    const handled: string[] = [];
    const handler = (r: TransportRecord): Promise<void> => {
      handled.push(`${r.partition}:${Buffer.from(r.value ?? new Uint8Array()).toString()}`);
      return Promise.resolve();
    };
    const growAndWrite = async (value: string): Promise<void> => {
      const kafka = rawKafka();
      const admin = kafka.admin();
      const producer = kafka.producer();
      await Promise.all([admin.connect(), producer.connect()]);
      try {
        await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] });
        await producer.send({ topic, messages: [{ partition: 3, value }] });
      } finally {
        await Promise.allSettled([admin.disconnect(), producer.disconnect()]);
      }
    };
    return { t, topic, group: uniqueName(`it-added-group-${client}`), handled, handler, growAndWrite };
  }

  it('a running member takes up the added partitions at its metadata refresh and reads them from their log start', { timeout: 90_000 }, async () => {
    const { t, topic, group, handled, handler, growAndWrite } = await setup(2_000);
    const c = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    try {
      await t.produce(topic, [{ key: null, value: Buffer.from('before'), headers: [], partition: 0 }]);
      await waitFor('the record written before', () => handled.includes('0:before'));
      await growAndWrite('on an added partition');
      await waitFor('the record on the added partition', () => handled.includes('3:on an added partition'), 60_000);
      expect(c.assignments().map((a) => a.partition).sort()).toEqual([0, 1, 2, 3]);
      expect(handled.filter((h) => h === '0:before')).toHaveLength(1);
    } finally {
      await c.stop();
    }
  });

  it('a member started after the change (the group idle meanwhile) reads an added partition without a commit from its log start, not from its end', { timeout: 90_000 }, async () => {
    // A long refresh: the first member stops before it could notice the new partitions.
    const { t, topic, group, handled, handler, growAndWrite } = await setup(600_000);
    const first = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    await t.produce(topic, [{ key: null, value: Buffer.from('before'), headers: [], partition: 0 }]);
    await waitFor('the record written before', () => handled.includes('0:before'));
    await growAndWrite('written while nobody read partition 3');
    await first.stop();
    const second = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    try {
      await waitFor('the record on the added partition', () => handled.includes('3:written while nobody read partition 3'), 60_000);
      expect(handled.filter((h) => h === '0:before')).toHaveLength(1); // partition 0 resumed from its commit
    } finally {
      await second.stop();
    }
  });
});
