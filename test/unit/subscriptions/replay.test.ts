/**
 * Replay (issue 9), the parts without a broker: `to` parsing and partition keys, the plan's
 * arithmetic, the CLI's offsets option and drain count, the replay state's lease, and a replay
 * whose group keeps a member (in-memory transport): refused after the wait, nothing moved, the
 * stored state says why.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReplayCoordinator, parsePartitionKey, parseReplayRequest, parseTarget, partitionKey, planOf, replayHolds, replayStatus } from '../../../src/bus/subscriptions/index.js';
import type { ReplayLog, ReplayOffsets, StoredReplay, SubscriptionStore } from '../../../src/bus/subscriptions/index.js';
import { drained, parseOffsetsOption } from '../../../src/cli/commands/replay.js';
import { silentLogger } from '../../../src/observability/index.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type { Consumption, Transport } from '../../../src/transport/index.js';
import { caught, caughtAsync } from '../../helpers/errors.js';
import { startedStoreAndAudit, storedPush } from '../../helpers/stored-subscription.js';
import { waitFor } from '../../helpers/wait.js';

const topicName = fc.stringMatching(/^[A-Za-z0-9._-]{1,40}$/);

describe('to', () => {
  it('takes earliest, latest, an RFC 3339 time, a Date and offsets by partition', () => {
    expect(parseTarget('earliest', ['t'])).toEqual({ kind: 'earliest' });
    expect(parseTarget('latest', ['t'])).toEqual({ kind: 'latest' });
    expect(parseTarget('2026-12-01T10:00:00+01:00', ['t'])).toEqual({ kind: 'timestamp', timestampMs: Date.parse('2026-12-01T09:00:00Z') });
    expect(parseTarget(new Date(5), ['t'])).toEqual({ kind: 'timestamp', timestampMs: 5 });
    expect(parseTarget({ 0: 5, 2: '9223372036854775807' }, ['t'])).toEqual({ kind: 'offsets', offsets: new Map([['0', 5n], ['2', 9223372036854775807n]]) });
    expect(parseTarget({ 'a/1': 3n }, ['a', 'b'])).toEqual({ kind: 'offsets', offsets: new Map([['a/1', 3n]]) });
  });

  it('refuses anything else, naming the field', () => {
    const field = (to: unknown, topics = ['t']): unknown => caught(() => parseTarget(to, topics))?.details.field;
    expect(field(undefined)).toBe('to');
    expect(field('2026-12-01T10:00:00')).toBe('to'); // no offset
    expect(field(new Date(Number.NaN))).toBe('to');
    expect(field({})).toBe('to');
    expect(field(['earliest'])).toBe('to');
    expect(field({ 0: -1 })).toBe('to.0');
    expect(field({ 0: 1.5 })).toBe('to.0');
    expect(field({ 0: 2 ** 53 })).toBe('to.0'); // beyond the safe range: send a string
    expect(field({ 0: '9223372036854775808' })).toBe('to.0');
    expect(field({ x: 1 })).toBe('to.x');
    expect(field({ 't/0': 1 })).toBe('to.t/0'); // one topic: plain partition numbers
    expect(field({ 0: 1 }, ['a', 'b'])).toBe('to.0'); // several: topic/partition
    expect(field({ 'c/0': 1 }, ['a', 'b'])).toBe('to.c/0');
    expect(caught(() => parseReplayRequest({ to: 'latest', dryRun: 1 }, ['t']))?.details.field).toBe('dryRun');
    expect(caught(() => parseReplayRequest({ to: 'latest', extra: 1 }, ['t']))?.details.field).toBe('extra');
    expect(caught(() => parseReplayRequest('latest', ['t']))).toMatchObject({ code: 'CEG_INVALID_REPLAY', retriable: false, details: { field: 'body' } });
  });

  it('partition keys name exactly one topic and partition', () => {
    fc.assert(
      fc.property(fc.uniqueArray(topicName, { minLength: 1, maxLength: 4 }), fc.nat({ max: 99_999 }), fc.nat(), (topics, partition, pick) => {
        const topic = topics[pick % topics.length]!;
        const key = partitionKey(topic, partition, topics);
        expect(parsePartitionKey(key, topics)).toEqual({ topic, partition });
        expect(key.includes('/')).toBe(topics.length > 1);
      }),
    );
  });
});

describe('the plan', () => {
  const offsets = fc.array(fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 10n ** 12n })), { minLength: 1, maxLength: 12 });

  it('events are the records handed out again (moving back), skipped those moved past (forward); totals are the sums', () => {
    fc.assert(
      fc.property(offsets, (pairs) => {
        const from: ReplayOffsets = new Map([['t', pairs.map(([f], partition) => ({ partition, offset: f }))]]);
        const to: ReplayOffsets = new Map([['t', pairs.map(([, t], partition) => ({ partition, offset: t }))]]);
        const plan = planOf(['t'], from, to);
        let events = 0;
        let skipped = 0;
        pairs.forEach(([f, t], p) => {
          const r = plan.partitions[String(p)]!;
          expect(r).toEqual({ from: f.toString(), to: t.toString(), events: Number(f > t ? f - t : 0n), skipped: Number(t > f ? t - f : 0n) });
          events += r.events;
          skipped += r.skipped;
        });
        expect(plan.events).toBe(events);
        expect(plan.skipped).toBe(skipped);
      }),
    );
  });

  it('the CLI counts the drained part of each partition from its committed offset, capped at its events', () => {
    const report = { partitions: { 0: { from: '10', to: '4', events: 6, skipped: 0 }, 1: { from: '3', to: '8', events: 0, skipped: 5 }, 2: { from: '7', to: '5', events: 2, skipped: 0 } } };
    const at = (c0: bigint | null, c2: bigint | null): number => drained(report, ['t'], new Map([['t', [{ partition: 0, offset: c0 }, { partition: 1, offset: 8n }, { partition: 2, offset: c2 }]]]));
    expect(at(4n, 5n)).toBe(0);
    expect(at(7n, null)).toBe(3);
    expect(at(10n, 7n)).toBe(8);
    expect(at(99n, 99n)).toBe(8);
  });

  it('the CLI reads --to-offsets as partition:offset pairs', () => {
    expect(parseOffsetsOption('0:42, 3:1000,t.x/2:9223372036854775807')).toEqual({ 0: 42, 3: 1000, 't.x/2': '9223372036854775807' });
    expect(() => parseOffsetsOption('0=42')).toThrow(/partition:offset/);
    expect(() => parseOffsetsOption('0:-1')).toThrow(/partition:offset/);
  });

  it('the CLI refuses a partition named twice in --to-offsets (the last value silently won)', () => {
    expect(() => parseOffsetsOption('0:1,0:2')).toThrow('partition 0 is given twice (0:1 and 0:2); give each partition once');
    expect(() => parseOffsetsOption('t.x/2:5, 3:1, t.x/2:5')).toThrow('partition t.x/2 is given twice');
    expect(parseOffsetsOption('t.x/2:5,t.y/2:5')).toEqual({ 't.x/2': 5, 't.y/2': 5 });
  });
});

/**
 * A stored push subscription `name` over topic `<prefix>.t` (2 partitions, 4 records, committed at
 * 2 and 2) whose group keeps a member no reconciler stops (another process in the same group), and
 * a replay coordinator with lease `leaseMs`.
 */
async function stuckGroup(prefix: string, name: string, leaseMs: number): Promise<{ transport: Transport; store: SubscriptionStore; audit: ReplayLog; group: string; member: Consumption; coordinator: ReplayCoordinator }> {
  const transport = createMemoryTransport();
  const log = silentLogger();
  await transport.ensureTopics([{ name: `${prefix}.t`, partitions: 2, retentionMs: -1, cleanupPolicy: 'delete' }]);
  await transport.produce(`${prefix}.t`, [0, 1, 0, 1].map((p) => ({ key: null, value: new Uint8Array([p]), headers: [], partition: p })));
  const { store, audit } = await startedStoreAndAudit(transport, prefix);
  const stored = storedPush(name, ['K']);
  const group = stored.group;
  await store.put(stored);
  expect(store.get(group)).toBeDefined();
  await transport.commitOffsets(group, `${prefix}.t`, [{ partition: 0, offset: 2n }, { partition: 1, offset: 2n }]);
  // A member of the group that no reconciler stops (another process in the same group).
  const member = await transport.consume({ group, topics: [`${prefix}.t`], startFrom: 'earliest' }, () => Promise.resolve());
  const coordinator = new ReplayCoordinator({ store, audit, transport, topicsOf: () => [`${prefix}.t`], instance: 'here', log, leaseMs: leaseMs });
  return { transport, store, audit, group, member, coordinator };
}

describe('the replay state', () => {
  const state = (phase: StoredReplay['phase'], leaseUntil: number): StoredReplay => ({ id: 'r', phase, requestedAt: new Date(0).toISOString(), leaseUntil: new Date(leaseUntil).toISOString(), instance: 'i' });

  it('pauses delivery only while pausing within its lease; an ended lease shows as expired', () => {
    expect(replayHolds(undefined, 0)).toBe(false);
    expect(replayHolds(state('pausing', 1000), 999)).toBe(true);
    expect(replayHolds(state('pausing', 1000), 1000)).toBe(false);
    expect(replayHolds(state('done', 1000), 0)).toBe(false);
    expect(replayHolds(state('failed', 1000), 0)).toBe(false);
    expect(replayStatus(state('pausing', 1000), 2000).phase).toBe('expired');
    expect(replayStatus(state('pausing', 1000), 0).phase).toBe('pausing');
  });

  it('a group that keeps a member: CEG_REPLAY_FAILED after the wait, nothing moved, the state says failed, delivery not held', async () => {
    const { transport, store, audit, group, member, coordinator } = await stuckGroup('rp', 'stuck', 1000);
    try {
      const dry = await coordinator.replay('stuck', { to: 'earliest', dryRun: true }, 'anonymous');
      expect(dry).toMatchObject({ events: 4, partitions: { 0: { from: '2', to: '0', events: 2 }, 1: { from: '2', to: '0', events: 2 } } });
      const err = await caughtAsync(coordinator.replay('stuck', { to: 'earliest' }, 'anonymous'));
      expect(err).toMatchObject({ code: 'CEG_REPLAY_FAILED', retriable: true });
      expect((await transport.committedOffsets(group, 'rp.t')).map((c) => c.offset)).toEqual([2n, 2n]);
      await coordinator.settled(); // written behind the answer
      expect(store.get(group)?.replay).toMatchObject({ phase: 'failed', instance: 'here' });
      expect(replayHolds(store.get(group)?.replay, Date.now())).toBe(false);
      // A replay that paused delivery is in the log whatever its end: this one failed, nothing moved.
      const entries = await coordinator.list('stuck');
      expect(entries.map((e) => [e.dryRun, e.outcome])).toEqual([[true, 'done'], [false, 'failed']]);
      expect(entries[1]).toMatchObject({ partitions: {}, events: 0, notMoved: { 0: { to: '0' }, 1: { to: '0' } }, error: { code: 'CEG_REPLAY_FAILED' } });
      expect(entries[1]!.error!.message).toContain('nothing was moved');
    } finally {
      await member.stop();
      await audit.stop();
      await store.stop();
      await transport.close();
    }
  });

  it('a subscription deleted while its replay waits for the group: CEG_NOT_FOUND saying so (not another replay taking over), nothing moved', async () => {
    const { transport, store, audit, group, member, coordinator } = await stuckGroup('rpd', 'gone', 20_000);
    try {
      const replaying = caughtAsync(coordinator.replay('gone', { to: 'earliest' }, 'anonymous'));
      await waitFor('the replay to pause the subscription', () => store.get(group)?.replay?.phase === 'pausing', 5_000, 10);
      await store.remove(group);
      const err = await replaying;
      expect(err).toMatchObject({ code: 'CEG_NOT_FOUND', retriable: false, details: { field: 'name' } });
      expect((err as Error).message).toContain('deleted during its replay');
      expect((await transport.committedOffsets(group, 'rpd.t')).map((c) => c.offset)).toEqual([2n, 2n]);
    } finally {
      await member.stop();
      await audit.stop();
      await store.stop();
      await transport.close();
    }
  });
});
