/**
 * A replay (and a subscription's `start`) right after partitions were added to a topic, on both
 * Kafka clients: the transport caches a topic's partition count for `metadata.max.age.ms` (30 s),
 * and `commitOffsets` refused a partition beyond the cached count as "outside topic" (a
 * non-retriable CEG_INVALID_OPTIONS, a 500 `Server misconfigured` over HTTP) although the broker
 * has it — so a replay or a `POST /subscriptions` in the 30 s after `kafka-topics --alter
 * --partitions` failed, once `offsetsAt` (which asks the broker) listed the new partitions.
 * Now a partition beyond the cached count makes the transport look the count up again before it
 * refuses, and the committed offsets list every partition the broker has.
 */
import { describe, expect, it } from 'vitest';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import { uniqueName } from '../helpers/stack.js';
import { rawProduce, recordsNoted, stackTopics, withRawAdmin } from '../helpers/stack-topics.js';
import { waitFor } from '../helpers/wait.js';

describe.each(KAFKA_CLIENTS)('offsets of partitions added to a topic (%s)', (client) => {
  const stack = stackTopics(client);

  /** A transport and a topic of 2 partitions on it. */
  async function setup() {
    const t = stack.transport({ clientId: uniqueName(`added-partitions-${client}`) });
    return { t, topic: await stack.topic(t, `it-added-partitions-${client}`, 2) };
  }

  const grow = (topic: string): Promise<void> => withRawAdmin(async (admin) => void (await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] })));

  it('commits offsets on a partition added after the count was cached, and lists it as committed', async () => {
    const { t, topic } = await setup();
    expect(await t.partitionCount(topic)).toBe(2); // cached now
    await grow(topic);
    const group = uniqueName(`it-added-partitions-group-${client}`);
    // What a replay to explicit offsets (or `earliest` once offsetsAt lists the new partitions) commits.
    await t.commitOffsets(group, topic, [
      { partition: 0, offset: 0n },
      { partition: 3, offset: 0n },
    ]);
    const committed = await t.committedOffsets(group, topic);
    expect(committed.map((c) => c.partition)).toEqual([0, 1, 2, 3]);
    expect(committed.find((c) => c.partition === 3)?.offset).toBe(0n);
    // The count is fresh again: every partition the broker has.
    expect(await t.partitionCount(topic)).toBe(4);
    expect((await t.offsetsAt(topic, { kind: 'earliest' })).map((o) => o.partition)).toEqual([0, 1, 2, 3]);
  });

  it('still refuses a partition the topic does not have, not retriable', async () => {
    const { t, topic } = await setup();
    const err = await t.commitOffsets(uniqueName('it-added-partitions-group'), topic, [{ partition: 2, offset: 0n }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'CEG_INVALID_OPTIONS', retriable: false, details: { topic, partition: 2 } });
  });

  // The documented procedure after adding partitions (docs/subscriptions.md "Adding partitions to a
  // topic"): a running member does not take up the new partitions, and one that later gets such a
  // partition without a commit would start at its end. What a replay with explicit offsets of the
  // new partitions does — stop the members, commit the log start there, start members again —
  // delivers what was written there meanwhile, and leaves the other partitions where they were.
  it('after partitions are added, members restarted on committed log starts of the new partitions read what was written there; the others resume', async () => {
    const { t, topic } = await setup();
    const group = uniqueName(`it-added-partitions-group-${client}`);
    const { handled, handler } = recordsNoted((_r, value) => value);
    const first = await t.consume({ group, topics: [topic], startFrom: 'earliest', commitEveryRecords: 1 }, handler);
    const enc = new TextEncoder();
    await t.produce(topic, [{ key: null, value: enc.encode('before'), headers: [], partition: 0 }]);
    await waitFor('the record written before', () => handled.includes('before'));
    await grow(topic);
    // A producer of its own (as a partner's or another service's would be): the topic now has 4.
    await rawProduce(topic, 3, 'on an added partition');
    await first.stop();
    await t.commitOffsets(group, topic, [{ partition: 2, offset: 0n }, { partition: 3, offset: 0n }]);
    const second = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    try {
      await waitFor('the record on the added partition', () => handled.includes('on an added partition'));
      expect(handled.filter((v) => v === 'before')).toHaveLength(1); // partition 0 resumed from its commit
    } finally {
      await second.stop();
    }
  });
});
