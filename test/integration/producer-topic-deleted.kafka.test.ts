/**
 * A topic the producer wrote to is deleted (an operator removes a leftover dead-letter topic): sends
 * to every other topic go on. On kafkajs they did not: its producer refreshes the metadata of every
 * topic it ever sent to and fails the whole refresh with UNKNOWN_TOPIC_OR_PARTITION when one is
 * gone, so once its metadata aged (`metadataMaxAgeMs`), every send failed as "unknown topic" until
 * the process restarted (kafka-transport #producerKnewDeletedTopic). Both clients, same assertions.
 */
import { describe, expect, it } from 'vitest';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import { uniqueName } from '../helpers/stack.js';
import { stackTopics, withRawAdmin } from '../helpers/stack-topics.js';

const record = (value: string): { key: Uint8Array; value: Uint8Array; headers: []; partition: number } => ({ key: new TextEncoder().encode('k'), value: new TextEncoder().encode(value), headers: [], partition: 0 });

describe.each(KAFKA_CLIENTS)('a topic the producer wrote to is deleted (%s)', (client) => {
  const stack = stackTopics(client);

  it('sends to the other topics go on after the producer metadata aged', { timeout: 90_000 }, async () => {
    const t = stack.transport({ clientId: uniqueName(`producer-deleted-${client}`), metadataMaxAgeMs: 500 });
    const kept = await stack.topic(t, 'producer-kept', 1);
    const deleted = await stack.topic(t, 'producer-deleted', 1);
    await t.produce(kept, [record('before')]);
    await t.produce(deleted, [record('gone soon')]);
    await withRawAdmin((admin) => admin.deleteTopics({ topics: [deleted] }));
    // Past the producer's metadata age: its next send refreshes the metadata of every topic it knows.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const [after] = await t.produce(kept, [record('after')]);
    expect(after).toMatchObject({ topic: kept, partition: 0, offset: 1n });
    const [again] = await t.produce(kept, [record('again')]);
    expect(again?.offset).toBe(2n);
  });
});
