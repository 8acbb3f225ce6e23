/**
 * `GET /subscriptions/{name}/status` on real Kafka, both clients: a topic the subscription reads
 * that does not exist is left out of the lag because the transport says it is missing
 * (transport/topics.ts topicMissing: UNKNOWN_TOPIC_OR_PARTITION → CEG_INVALID_NAME with
 * `details.topicMissing`), and so is one deleted after the transport cached its partition count.
 * Until 2026-12-07 the status asked `partitionCount` first and took any CEG_INVALID_NAME for "missing":
 * the cached count said the deleted topic was there, its end offsets' read then failed, and the
 * status answered CEG_INVALID_NAME (a 400) instead of the lag of the topics that exist.
 * The memory transport: test/unit/status/missing-topic.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SubscriptionOperations } from '../../src/bus/status/index.js';
import type { SubscriptionTarget } from '../../src/bus/status/index.js';
import type { DeadLetters } from '../../src/bus/deadletters/index.js';
import { isGatewayError } from '../../src/core/errors.js';
import { topicMissing } from '../../src/transport/topics.js';
import type { Transport } from '../../src/transport/index.js';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import { uniqueName } from '../helpers/stack.js';
import { stackTopics, withRawAdmin } from '../helpers/stack-topics.js';
import { waitFor } from '../helpers/wait.js';

/** SubscriptionOperations over `transport` answering one subscription `s` reading `topics`; its dead letters are not asked for here. */
function operations(transport: Transport, group: string, topics: readonly string[]): SubscriptionOperations {
  const target: SubscriptionTarget = { name: 's', owner: 'anonymous', group, origin: 'library', state: 'active', topics };
  return new SubscriptionOperations({ transport, deadLetters: undefined as unknown as DeadLetters, resolve: (name) => (name === 's' ? target : undefined), member: () => undefined, instance: 'kafka-1' });
}

describe.each(KAFKA_CLIENTS)('status of a subscription whose topic is missing (%s)', (client) => {
  const stack = stackTopics(client);

  it('the transport says a missing topic is missing', { timeout: 60_000 }, async () => {
    const t = stack.transport({ clientId: uniqueName(`status-missing-${client}`) });
    const never = uniqueName('status-never');
    for (const read of [() => t.partitionCount(never), () => t.endOffsets(never), () => t.committedOffsets('g', never)]) {
      const err: unknown = await read().then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(err, 'CEG_INVALID_NAME') && err.details.topicMissing).toBe(true);
      expect(topicMissing(err)).toBe(true);
    }
    const refused: unknown = await t.partitionCount('bad name!').then(() => undefined, (e: unknown) => e);
    expect(isGatewayError(refused, 'CEG_INVALID_NAME')).toBe(true);
    expect(topicMissing(refused)).toBe(false);
  });

  it('leaves out a topic that never existed', { timeout: 60_000 }, async () => {
    const t = stack.transport({ clientId: uniqueName(`status-never-${client}`) });
    const kept = await stack.topic(t, 'status-kept', 2);
    const st = await operations(t, uniqueName('status-group'), [kept, uniqueName('status-never')]).status('s');
    expect(st.lag.partitions.map((p) => `${p.topic}/${p.partition}`)).toEqual([`${kept}/0`, `${kept}/1`]);
  });

  // kafkajs: its admin refreshes every topic it was asked about, so a deleted one failed the reads
  // of the others too, until the transport retired that admin (kafka-transport #forgettingDeletedTopics).
  it('leaves out a topic deleted since its partition count was cached', { timeout: 90_000 }, async () => {
    const t = stack.transport({ clientId: uniqueName(`status-deleted-${client}`) });
    const kept = await stack.topic(t, 'status-kept', 2);
    const deleted = await stack.topic(t, 'status-deleted', 1);
    const ops = operations(t, uniqueName('status-group'), [kept, deleted]);
    const before = await ops.status('s');
    expect(before.lag.partitions.map((p) => `${p.topic}/${p.partition}`).sort()).toEqual([`${deleted}/0`, `${kept}/0`, `${kept}/1`].sort());
    await withRawAdmin((admin) => admin.deleteTopics({ topics: [deleted] }));
    // The broker answers from a metadata cache that takes the deletion up a moment after
    // DeleteTopics returned; until then it still lists the topic and answers its offsets.
    await waitFor(`${deleted} no longer listed`, () => withRawAdmin(async (admin) => !(await admin.listTopics()).includes(deleted)), 30_000, 200);
    // The transport still has the deleted topic's partition count cached (metadataMaxAgeMs).
    expect(await t.partitionCount(deleted)).toBe(1);
    const after = await ops.status('s');
    expect(after.lag.partitions.map((p) => `${p.topic}/${p.partition}`)).toEqual([`${kept}/0`, `${kept}/1`]);
    expect(after.lag.total).toBe(0);
  });
});
