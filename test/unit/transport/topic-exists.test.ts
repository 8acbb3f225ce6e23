/**
 * `topicExists` (transport/topics.ts; the dead-letter routes, the marks, the subscription service
 * and reconciler ask it) says `false` only for a topic the transport says is missing
 * (`topicMissing`: CEG_INVALID_NAME with `details.topicMissing`), not for any CEG_INVALID_NAME: a
 * name the topic-name rule refuses is thrown as the error it is (until 2026-12-07 it was `false`,
 * a refused name taken for a topic not created yet). On the memory transport, which maps both as
 * the Kafka transports do (status-missing-topic.kafka.test.ts checks their mapping).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { createMemoryTransport } from '../../../src/transport/memory/memory-transport.js';
import type { Transport } from '../../../src/transport/port.js';
import { topicExists, unknownTopic } from '../../../src/transport/topics.js';

let t: Transport | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('topicExists', () => {
  it('is true for a topic there, false for one that is missing', async () => {
    t = createMemoryTransport();
    await t.ensureTopics([{ name: 'exists.a', partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
    expect(await topicExists(t, 'exists.a')).toBe(true);
    expect(await topicExists(t, 'never.created')).toBe(false);
  });

  it('throws a name the topic-name rule refuses, not false', async () => {
    t = createMemoryTransport();
    for (const bad of ['bad name!', '', '..', 'x'.repeat(300)]) {
      await expect(topicExists(t, bad), JSON.stringify(bad)).rejects.toMatchObject({ code: 'CEG_INVALID_NAME', retriable: false });
    }
  });

  it('throws a CEG_INVALID_NAME of the lookup without topicMissing (a broker refusing the name), false only with it', async () => {
    const refused = new GatewayError('CEG_INVALID_NAME', 'partitionCount: the broker refused the name (INVALID_TOPIC_EXCEPTION)', { retriable: false, details: { topic: 't' } });
    await expect(topicExists({ partitionCount: () => Promise.reject(refused) }, 't')).rejects.toBe(refused);
    expect(await topicExists({ partitionCount: () => Promise.reject(unknownTopic('t')) }, 't')).toBe(false);
  });
});
