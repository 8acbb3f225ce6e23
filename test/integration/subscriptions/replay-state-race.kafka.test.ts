/**
 * A replay's end against a change another gateway instance stores at that moment, on the real
 * broker: two instances' definitions stores (each with its own Kafka clients) on one definitions
 * topic of this run's own; instance A coordinates the replay, instance B pauses (or deletes) the
 * subscription as A writes the replay's `done`, A's record landing after B's (A's produce is held
 * until B's change is read back on B). The pause stays paused, the delete stays deleted, on both
 * instances and for an instance that reads the topic from the start. Before, A wrote `done` onto
 * its own copy of the record, which lacked the pause: the later record resumed delivery everywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplayCoordinator, ReplayLog, SubscriptionStore } from '../../../src/bus/subscriptions/index.js';
import type { StoredSubscription } from '../../../src/bus/subscriptions/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import type { OutboundRecord, Position, ProduceOptions, Transport } from '../../../src/transport/index.js';
import { transportOn } from '../../helpers/kafka-client.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';
import { storedPush } from '../../helpers/stored-subscription.js';
import { waitFor } from '../../helpers/wait.js';

const run = uniqueName('it-replay-race');
const topic = `${run}.t`;
const definitions = `${run}.subscriptions`;
const dec = new TextDecoder();
const log = silentLogger();
const transports: Transport[] = [];
const stops: (() => Promise<void>)[] = [];

function transport(id: string): Transport {
  const t = transportOn({ brokers: stackEnv().kafkaBrokers, clientId: `${run}-${id}` });
  transports.push(t);
  return t;
}

async function started(t: Transport): Promise<SubscriptionStore> {
  const store = new SubscriptionStore(t, definitions, log);
  await store.start();
  stops.push(() => store.stop());
  return store;
}

let ta: Transport;
let b: SubscriptionStore;

beforeAll(async () => {
  ta = transport('a');
  await ta.ensureTopics([{ name: topic, partitions: 2, retentionMs: -1, cleanupPolicy: 'delete' }]);
  await ta.produce(topic, [0, 1, 0, 1].map((p) => ({ key: null, value: new Uint8Array([p]), headers: [], partition: p })));
  b = await started(transport('b'));
}, 60_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await Promise.allSettled(transports.map((t) => t.close()));
});

/** Instance A's transport: its first produce of a `done` replay state to the definitions topic waits for `before` (B's change). */
function heldBefore(before: () => Promise<void>): Transport {
  let held = false;
  const isDone = (r: OutboundRecord): boolean => r.value !== null && (JSON.parse(dec.decode(r.value)) as Partial<StoredSubscription>).replay?.phase === 'done';
  return new Proxy(ta, {
    get(target, prop, receiver) {
      if (prop === 'produce') {
        return async (t: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> => {
          if (t === definitions && !held && records.some(isDone)) {
            held = true;
            await before();
          }
          return await target.produce(t, records, opts);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** A subscription stored from B, its group committed at 2 and 2 (no member: the replay commits at once), and instance A. */
async function setUp(name: string, before: (group: string) => Promise<void>): Promise<{ group: string; a: SubscriptionStore; coordinator: ReplayCoordinator }> {
  const s = storedPush(name, ['K']);
  await b.put(s);
  await ta.commitOffsets(s.group, topic, [{ partition: 0, offset: 2n }, { partition: 1, offset: 2n }]);
  const ha = heldBefore(() => before(s.group));
  const a = await started(ha);
  const audit = new ReplayLog(ta, `${definitions}.replays`, log);
  await audit.start();
  stops.push(() => audit.stop());
  const coordinator = new ReplayCoordinator({ store: a, audit, transport: ta, topicsOf: () => [topic], instance: 'a', log });
  return { group: s.group, a, coordinator };
}

async function paused(group: string): Promise<void> {
  await waitFor('B to see the replay pause', () => b.get(group)?.replay?.phase === 'pausing', 10_000, 10);
}

describe('a replay\'s end and another instance\'s change at the same moment, two instances on the broker', () => {
  it('a pause B stores as A writes done stays paused, with the replay done, on both and for a fresh reader', async () => {
    const { group, a, coordinator } = await setUp(uniqueName('rr').replace(/\./g, '-'), async (g) => {
      await paused(g);
      const current = b.get(g)!;
      // As B's PATCH writes it: onto B's copy (the replay's pause kept), generation + 1.
      await b.put({ ...current, state: 'paused', generation: current.generation + 1, updatedAt: new Date().toISOString() });
    });
    const report = await coordinator.replay(group.slice('ce-gateway.sub.anonymous.'.length), { to: 'earliest' }, 'ops');
    expect(report).toMatchObject({ outcome: 'done', events: 4 });
    expect((await ta.committedOffsets(group, topic)).map((c) => c.offset)).toEqual([0n, 0n]);
    expect(a.get(group)).toMatchObject({ state: 'paused', generation: 2, replay: { phase: 'done' } });
    await waitFor('B to read the end', () => b.get(group)?.replay?.phase === 'done' && b.get(group)?.state === 'paused', 10_000, 10);
    const fresh = await started(transport('c'));
    expect(fresh.get(group)).toMatchObject({ state: 'paused', generation: 2, replay: { phase: 'done' } });
  }, 60_000);

  it('a delete B makes as A writes done stays deleted (A\'s end does not bring it back)', async () => {
    const { group, a, coordinator } = await setUp(uniqueName('rd').replace(/\./g, '-'), async (g) => {
      await paused(g);
      await b.remove(g);
    });
    expect(await coordinator.replay(group.slice('ce-gateway.sub.anonymous.'.length), { to: 'earliest' }, 'ops')).toMatchObject({ outcome: 'done', events: 4 });
    expect(a.get(group)).toBeUndefined();
    const fresh = await started(transport('d'));
    expect(fresh.get(group)).toBeUndefined();
  }, 60_000);
});
