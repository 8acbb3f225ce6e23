/**
 * Where a group without a commit starts, as the status's lag and a replay's `from` report it
 * (in-memory transport): on a partition whose push subscription keeps a live start position for a
 * kind added by PATCH (stored `startAt`, not yet committed by a member), they count from that
 * position — not from the end (a lag of nothing, a dry run that skips nothing) nor as unknown. A
 * commit wins over it; an expired one (START_AT_TTL_MS) is not used.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SubscriptionOperations, subscriptionLag } from '../../../../src/bus/status/index.js';
import type { SubscriptionTarget } from '../../../../src/bus/status/index.js';
import { ReplayCoordinator } from '../../../../src/bus/subscriptions/index.js';
import type { ReplayLog, SubscriptionStore } from '../../../../src/bus/subscriptions/index.js';
import { START_AT_TTL_MS, startPositionsOf } from '../../../../src/bus/subscriptions/stored.js';
import { silentLogger } from '../../../../src/observability/index.js';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { Transport } from '../../../../src/transport/index.js';
import { startedStoreAndAudit, storedPush } from '../../../helpers/stored-subscription.js';

const topic = 'sa.t';
const name = 'patched';
const group = `ce-gateway.sub.anonymous.${name}`;

let transport: Transport;
let store: SubscriptionStore;
let audit: ReplayLog;
let stop: () => Promise<void>;

beforeEach(async () => {
  transport = createMemoryTransport();
  await transport.ensureTopics([{ name: topic, partitions: 3, retentionMs: -1, cleanupPolicy: 'delete' }]);
  // Ends: partition 0 at 4, 1 at 4, 2 at 2.
  await transport.produce(topic, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2].map((partition) => ({ key: null, value: new Uint8Array([partition]), headers: [], partition })));
  ({ store, audit, stop } = await startedStoreAndAudit(transport, 'sa'));
  const now = Date.now();
  await store.put(storedPush(name, ['K'], {
    state: 'paused',
    createdAt: new Date(now).toISOString(), updatedAt: new Date(now).toISOString(), generation: 2,
    startAt: [
      { topic, partition: 0, offset: '1', takenAt: new Date(now - 60_000).toISOString() }, // live, no commit: counts
      { topic, partition: 1, offset: '3', takenAt: new Date(now - 60_000).toISOString() }, // live, but the group committed 2 there
      { topic, partition: 2, offset: '0', takenAt: new Date(now - START_AT_TTL_MS - 1).toISOString() }, // expired
    ],
  }));
  await transport.commitOffsets(group, topic, [{ partition: 1, offset: 2n }]);
});

afterEach(async () => {
  await stop();
  await transport.close();
});

describe('a kind added by PATCH, before a member committed its start', () => {
  it('the status lag counts from the live start position where nothing is committed', async () => {
    const startAt = startPositionsOf(store.get(group), Date.now());
    expect(startAt).toEqual([{ topic, partition: 0, offset: 1n }, { topic, partition: 1, offset: 3n }]);
    const target: SubscriptionTarget = { name, owner: 'anonymous', group, origin: 'api', state: 'paused', topics: [topic], startAt };
    const ops = new SubscriptionOperations({ transport, deadLetters: undefined as never, resolve: (n) => (n === name ? target : undefined), member: () => undefined, instance: 'here' });
    const { lag } = await ops.status(name);
    expect(lag.partitions).toEqual([
      { topic, partition: 0, endOffset: '4', committedOffset: null, startOffset: '1', lag: 3 },
      { topic, partition: 1, endOffset: '4', committedOffset: '2', lag: 2 }, // the commit wins
      { topic, partition: 2, endOffset: '2', committedOffset: null, lag: null }, // expired: no figure, as for any partition without a commit
    ]);
    expect(lag.total).toBe(5);
    // Without start positions (a library subscription): as before.
    expect((await subscriptionLag(transport, group, [topic])).partitions[0]).toEqual({ topic, partition: 0, endOffset: '4', committedOffset: null, lag: null });
  });

  it('a replay (dry run and real) counts `from` at the live start position where nothing is committed', async () => {
    const coordinator = new ReplayCoordinator({ store, audit, transport, topicsOf: () => [topic], instance: 'here', log: silentLogger(), leaseMs: 5000 });
    const back = await coordinator.replay(name, { to: 'earliest', dryRun: true }, 'anonymous');
    // 0: from its start position 1; 1: from its commit 2; 2: expired, so from where a member would start (the end).
    expect(back.partitions).toEqual({ 0: { from: '1', to: '0', events: 1, skipped: 0 }, 1: { from: '2', to: '0', events: 2, skipped: 0 }, 2: { from: '2', to: '0', events: 2, skipped: 0 } });
    expect(back.events).toBe(5);
    const forward = await coordinator.replay(name, { to: 'latest', dryRun: true }, 'anonymous');
    expect(forward).toMatchObject({ events: 0, skipped: 5, partitions: { 0: { from: '1', to: '4', skipped: 3 }, 1: { from: '2', to: '4', skipped: 2 }, 2: { from: '2', to: '2', skipped: 0 } } });
    const real = await coordinator.replay(name, { to: 'latest' }, 'anonymous');
    expect(real.partitions).toEqual(forward.partitions);
    expect((await transport.committedOffsets(group, topic)).map((c) => c.offset)).toEqual([4n, 4n, 2n]);
  });
});
