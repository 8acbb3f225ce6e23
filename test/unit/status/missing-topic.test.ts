/**
 * `GET /subscriptions/{name}/status` leaves out a topic that does not exist (a retry or redrive
 * topic of a subscription that never ran) because the transport says it is missing
 * (transport/topics.ts topicMissing: `details.topicMissing` on CEG_INVALID_NAME), not because of any
 * CEG_INVALID_NAME: a name the charset rule refuses is an error of the answer, not a missing topic
 * (until 2026-12-07 it was silently left out). The memory transport here; both Kafka clients in
 * test/integration/status-missing-topic.kafka.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SubscriptionOperations } from '../../../src/bus/status/index.js';
import type { SubscriptionTarget } from '../../../src/bus/status/index.js';
import type { DeadLetters } from '../../../src/bus/deadletters/index.js';
import { isGatewayError } from '../../../src/core/errors.js';
import { createMemoryTransport } from '../../../src/transport/memory/memory-transport.js';
import { topicMissing } from '../../../src/transport/topics.js';
import type { Transport } from '../../../src/transport/index.js';

/** SubscriptionOperations over `transport` answering one subscription `s` reading `topics`; its dead letters are not asked for here. */
function operations(transport: Transport, topics: readonly string[]): SubscriptionOperations {
  const target: SubscriptionTarget = { name: 's', owner: 'anonymous', group: 's', origin: 'library', state: 'active', topics };
  return new SubscriptionOperations({ transport, deadLetters: undefined as unknown as DeadLetters, resolve: (name) => (name === 's' ? target : undefined), member: () => undefined, instance: 'mem-1' });
}

describe('status on the memory transport', () => {
  it('says a missing topic is missing (topicMissing), and a refused name is not', async () => {
    const t = createMemoryTransport();
    const missing: unknown = await t.partitionCount('never.created').catch((e: unknown) => e);
    expect(isGatewayError(missing, 'CEG_INVALID_NAME') && missing.details).toMatchObject({ topic: 'never.created', topicMissing: true });
    expect(topicMissing(missing)).toBe(true);
    const refused: unknown = await t.partitionCount('bad name!').catch((e: unknown) => e);
    expect(isGatewayError(refused, 'CEG_INVALID_NAME')).toBe(true);
    expect(topicMissing(refused)).toBe(false);
    await t.close();
  });

  it('leaves a missing topic out of the lag, and answers a refused name as an error', async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([{ name: 'status.a', partitions: 2, retentionMs: -1, cleanupPolicy: 'delete' }]);
    const st = await operations(t, ['status.a', 's.retry', 's.redrive']).status('s');
    expect(st.lag.partitions.map((p) => `${p.topic}/${p.partition}`)).toEqual(['status.a/0', 'status.a/1']);
    await expect(operations(t, ['status.a', 'bad name!']).status('s')).rejects.toMatchObject({ code: 'CEG_INVALID_NAME' });
    await t.close();
  });
});
