/**
 * A replay under concurrency and failure (issue 9), on the in-memory transport with two gateway
 * instances' stores on one definitions topic (instance A coordinates, instance B changes the
 * subscription meanwhile):
 * - A change B stores at the moment A writes the replay's end stays: a pause stays paused, a
 *   delete stays deleted, a later replay's pause stays. Before, A wrote its end onto its own copy
 *   of the record, which lacked B's change, and the later record replaced B's on every instance.
 * - A failed replay is answered without waiting for its `failed` state (held here until the answer
 *   came: before, that never answered), and a retry sent to the same instance at once is taken,
 *   not refused as a replay under way; after a coordinator move (a retriable broker failure at
 *   the commit) the retry moves the offsets.
 * - A finished replay whose audit entry cannot be written answers the report with `auditFailure`,
 *   counted, not an error (before: an error, though the offsets had moved).
 * (The interleavings are made by holding instance A's produce to a topic: its own record lands
 * after B's.)
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReplayCoordinator, ReplayLog, SubscriptionStore } from '../../../../src/bus/subscriptions/index.js';
import type { StoredSubscription } from '../../../../src/bus/subscriptions/index.js';
import { GatewayError } from '../../../../src/core/errors.js';
import { silentLogger } from '../../../../src/observability/index.js';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { OutboundRecord, PartitionOffset, Position, ProduceOptions, Transport } from '../../../../src/transport/index.js';
import { caughtAsync } from '../../../helpers/errors.js';
import { storedPush } from '../../../helpers/stored-subscription.js';
import { waitFor } from '../../../helpers/wait.js';

const name = 'raced';
const group = `ce-gateway.sub.anonymous.${name}`;
const topic = 'rsr.t';
const definitions = 'rsr.subscriptions';
const auditTopic = 'rsr.subscriptions.replays';
const dec = new TextDecoder();

let transport: Transport;
let b: SubscriptionStore;
const stops: (() => Promise<void>)[] = [];

beforeEach(async () => {
  transport = createMemoryTransport();
  await transport.ensureTopics([{ name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
  await transport.produce(topic, [0, 1, 2, 3].map(() => ({ key: null, value: new Uint8Array([1]), headers: [], partition: 0 })));
  await transport.commitOffsets(group, topic, [{ partition: 0, offset: 4n }]);
  b = await started(transport);
  await b.put(storedPush(name, ['K']));
});

afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await transport.close();
});

async function started(t: Transport): Promise<SubscriptionStore> {
  const store = new SubscriptionStore(t, definitions, silentLogger());
  await store.start();
  stops.push(() => store.stop());
  return store;
}

/** The replay state in a definitions record's value (undefined for a tombstone or none). */
function phaseOf(r: OutboundRecord): string | undefined {
  if (r.value === null) return undefined;
  return (JSON.parse(dec.decode(r.value)) as Partial<StoredSubscription>).replay?.phase;
}

/**
 * `transport` whose first produce to `to` that `matches` waits for `before` (another instance's
 * change, or a gate), then goes through. `entered` resolves when it is held.
 */
function holding(to: string, matches: (records: readonly OutboundRecord[]) => boolean, before: () => Promise<void>): { transport: Transport; entered: Promise<void> } {
  let held = false;
  let enter!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const proxy: Transport = new Proxy(transport, {
    get(target, prop, receiver) {
      if (prop === 'produce') {
        return async (t: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> => {
          if (t === to && !held && matches(records)) {
            held = true;
            enter();
            await before();
          }
          return await target.produce(t, records, opts);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { transport: proxy, entered };
}

/** Instance A: its store and audit log on `storeTransport`, its coordinator committing through `commits`. */
async function instanceA(storeTransport: Transport, commits: Transport = transport, auditTransport: Transport = transport): Promise<{ store: SubscriptionStore; audit: ReplayLog; coordinator: ReplayCoordinator }> {
  const store = await started(storeTransport);
  const audit = new ReplayLog(auditTransport, auditTopic, silentLogger());
  await audit.start();
  stops.push(() => audit.stop());
  const coordinator = new ReplayCoordinator({ store, audit, transport: commits, topicsOf: () => [topic], instance: 'a', log: silentLogger() });
  return { store, audit, coordinator };
}

/** B's PATCH of `over` (as the service writes one: onto B's copy, generation + 1, the replay state kept). */
async function patchOnB(over: Partial<StoredSubscription>): Promise<void> {
  await waitFor('B to see the replay pause', () => b.get(group)?.replay?.phase === 'pausing', 5000, 5);
  const current = b.get(group)!;
  await b.put({ ...current, ...over, generation: current.generation + 1, updatedAt: new Date().toISOString() });
}

/** What a gateway instance starting now reads from the definitions topic. */
async function freshView(): Promise<StoredSubscription | undefined> {
  const c = await started(transport);
  return c.get(group);
}

describe('a change another instance stores while a replay writes its end stays', () => {
  it('a pause stored on B as A writes `done`: still paused, with the replay done, on every instance', async () => {
    const held = holding(definitions, (rs) => rs.some((r) => phaseOf(r) === 'done'), () => patchOnB({ state: 'paused' }));
    const a = await instanceA(held.transport);
    const report = await a.coordinator.replay(name, { to: 'earliest' }, 'ops');
    expect(report).toMatchObject({ outcome: 'done', events: 4 });
    expect(report).not.toHaveProperty('auditFailure');
    expect(await transport.committedOffsets(group, topic)).toEqual([{ partition: 0, offset: 0n }]);
    expect(a.store.get(group)).toMatchObject({ state: 'paused', generation: 2, replay: { phase: 'done' } });
    await waitFor('B to read the end', () => b.get(group)?.replay?.phase === 'done', 5000, 5);
    expect(b.get(group)).toMatchObject({ state: 'paused', generation: 2 });
    expect(await freshView()).toMatchObject({ state: 'paused', generation: 2, replay: { phase: 'done' } });
  });

  it('a delete on B as A writes `done`: the answer is the report (the offsets moved), the subscription stays deleted', async () => {
    const held = holding(definitions, (rs) => rs.some((r) => phaseOf(r) === 'done'), async () => {
      await waitFor('B to see the replay pause', () => b.get(group)?.replay?.phase === 'pausing', 5000, 5);
      await b.remove(group);
    });
    const a = await instanceA(held.transport);
    expect(await a.coordinator.replay(name, { to: 'earliest' }, 'ops')).toMatchObject({ outcome: 'done', events: 4 });
    expect(a.store.get(group)).toBeUndefined();
    expect(await freshView()).toBeUndefined();
  });

  it('a later replay\'s pause stored on B as A writes its `failed` end: the later pause stays', async () => {
    let later: StoredSubscription | undefined;
    const held = holding(definitions, (rs) => rs.some((r) => phaseOf(r) === 'failed'), async () => {
      await waitFor('B to see the replay pause', () => b.get(group)?.replay?.phase === 'pausing', 5000, 5);
      const current = b.get(group)!;
      const now = Date.now();
      later = { ...current, replay: { id: 'later', phase: 'pausing', requestedAt: new Date(now).toISOString(), leaseUntil: new Date(now + 60_000).toISOString(), instance: 'b' } };
      await b.put(later);
    });
    const a = await instanceA(held.transport, refusingCommits(() => new GatewayError('CEG_FORBIDDEN', 'Kafka refused the commit: GROUP_AUTHORIZATION_FAILED', { retriable: false })));
    expect(await caughtAsync(a.coordinator.replay(name, { to: 'earliest' }, 'ops'))).toMatchObject({ code: 'CEG_FORBIDDEN' });
    await a.coordinator.settled();
    expect(a.store.get(group)?.replay).toMatchObject({ id: 'later', phase: 'pausing' });
    expect((await freshView())?.replay).toMatchObject({ id: 'later', phase: 'pausing' });
  });
});

/** The transport, its first commit of the replay's target (offset 0) refused with `fail()`'s error. */
function refusingCommits(fail: () => unknown): Transport {
  let refused = false;
  return new Proxy(transport, {
    get(target, prop, receiver) {
      if (prop === 'commitOffsets') {
        return async (g: string, t: string, offsets: readonly PartitionOffset[]): Promise<void> => {
          if (!refused && offsets[0]?.offset === 0n) {
            refused = true;
            throw fail();
          }
          await target.commitOffsets(g, t, offsets);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

describe('a failed replay and its retry', () => {
  it('a coordinator move at the commit: 503-retriable at once, before its `failed` state is stored; the same request again at once moves the offsets', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const held = holding(definitions, (rs) => rs.some((r) => phaseOf(r) === 'failed'), () => gate);
    // As the transports say a group coordinator that moved (NOT_COORDINATOR): the broker unavailable, retriable.
    const moved = refusingCommits(() => new GatewayError('CEG_BROKER_UNAVAILABLE', 'kafka: This is not the correct coordinator for this group (NOT_COORDINATOR)', { retriable: true }));
    const a = await instanceA(held.transport, moved);
    // Before, the answer waited for the `failed` state, held here until the answer came: it never came.
    const first = await caughtAsync(a.coordinator.replay(name, { to: 'earliest' }, 'ops'));
    expect(first).toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE', retriable: true });
    await held.entered;
    expect(a.store.get(group)?.replay?.phase).toBe('pausing'); // its end is still being written
    // Taken, not refused as under way (its checks run before its first wait); its pause goes on after that end.
    const retry = a.coordinator.replay(name, { to: 'earliest' }, 'ops');
    open();
    const report = await retry;
    expect(report).toMatchObject({ outcome: 'done', events: 4, partitions: { 0: { from: '4', to: '0' } } });
    expect(await transport.committedOffsets(group, topic)).toEqual([{ partition: 0, offset: 0n }]);
    expect(a.store.get(group)?.replay).toMatchObject({ phase: 'done' });
    expect(a.store.get(group)?.replay?.id).not.toBe(undefined);
    await a.coordinator.settled();
    await a.coordinator.background.settled();
    expect((await a.coordinator.list(name)).map((e) => e.outcome)).toEqual(['failed', 'done']);
  });
});

describe('a finished replay whose audit entry cannot be written', () => {
  it('answers the report with auditFailure (the offsets moved), counted; the state is done', async () => {
    const refusing = new Proxy(transport, {
      get(target, prop, receiver) {
        if (prop === 'produce') {
          return async (t: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> => {
            if (t === auditTopic) throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'kafka: connect ECONNREFUSED', { retriable: true });
            return await target.produce(t, records, opts);
          };
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const a = await instanceA(transport, transport, refusing);
    const report = await a.coordinator.replay(name, { to: 'earliest' }, 'ops');
    expect(report).toMatchObject({ outcome: 'done', events: 4, auditFailure: { code: 'CEG_BROKER_UNAVAILABLE', message: 'kafka: connect ECONNREFUSED' } });
    expect(await transport.committedOffsets(group, topic)).toEqual([{ partition: 0, offset: 0n }]);
    expect(a.store.get(group)?.replay?.phase).toBe('done');
    expect(a.coordinator.background.failures).toBe(1);
    // A dry run moved nothing: its entry's failure is its error.
    expect(await caughtAsync(a.coordinator.replay(name, { to: 'earliest', dryRun: true }, 'ops'))).toMatchObject({ code: 'CEG_BROKER_UNAVAILABLE' });
  });
});
