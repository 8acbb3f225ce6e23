/**
 * Changes of one subscription's stored record by two gateway instances at the same moment, for
 * the in-memory transport and the broker alike: instance A changes the subscription through its
 * service (`PATCH` = `update`, the gateway's own `setState`), and instance B stores another change
 * (a replay's `done`, a PATCH, a DELETE) while A's record is on its way — A's produce to the
 * definitions topic is held until B's change is read back on B, so A's record lands after B's. A's
 * record used to be built on its own copy, which lacked B's change: it undid B's change on every
 * instance (a replay's `pausing` put back after its `done` held delivery until the lease ran out).
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { SubscriptionService, SubscriptionStore, storeReplayState } from '../../src/bus/subscriptions/index.js';
import type { StoredReplay, StoredSubscription } from '../../src/bus/subscriptions/index.js';
import { loadCatalog } from '../../src/catalog/index.js';
import { silentLogger } from '../../src/observability/index.js';
import type { OutboundRecord, Position, ProduceOptions, Transport } from '../../src/transport/index.js';
import { caughtAsync } from './errors.js';
import { storedPush } from './stored-subscription.js';
import { waitFor } from './wait.js';

export interface RaceWorld {
  /** The definitions topic of this run. */
  readonly definitions: string;
  /** An instance's transport: its own Kafka clients on the broker (closed by the caller), the one in-memory transport otherwise. */
  transport(id: string): Transport;
  /** Called with every store started, to be stopped after the test. */
  started(stop: () => Promise<void>): void;
}

const dec = new TextDecoder();
const catalog = loadCatalog();

/** The stored value in a definitions record (undefined for a tombstone or a claim). */
function valueOf(r: OutboundRecord): Partial<StoredSubscription> | undefined {
  return r.value === null ? undefined : (JSON.parse(dec.decode(r.value)) as Partial<StoredSubscription>);
}

/** `t`, its first produce to `topic` of a record that `matches` held until `before()` resolved. */
function holding(t: Transport, topic: string, matches: (v: Partial<StoredSubscription>) => boolean, before: () => Promise<void>): Transport {
  let held = false;
  return new Proxy(t, {
    get(target, prop, receiver) {
      if (prop === 'produce') {
        return async (to: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> => {
          if (to === topic && !held && records.some((r) => { const v = valueOf(r); return v !== undefined && matches(v); })) {
            held = true;
            await before();
          }
          return await target.produce(to, records, opts);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

async function startedStore(world: RaceWorld, t: Transport): Promise<SubscriptionStore> {
  const store = new SubscriptionStore(t, world.definitions, silentLogger());
  await store.start();
  world.started(() => store.stop());
  return store;
}

function serviceOn(store: SubscriptionStore, t: Transport): SubscriptionService {
  // A pull subscription: no secrets to open (no key needed), no webhook target to check.
  return new SubscriptionService({ store, box: undefined, catalog, transport: t, checkTarget: () => Promise.resolve() });
}

/**
 * Instance B with a pull subscription under a replay (`pausing`, stored from B), and instance A,
 * whose first definitions record that `matches` waits for `onB(b, group)`.
 */
async function raced(world: RaceWorld, matches: (v: Partial<StoredSubscription>) => boolean, onB: (b: { store: SubscriptionStore; service: SubscriptionService }, group: string, replay: StoredReplay, name: string) => Promise<void>) {
  const name = `raced-${randomUUID().slice(0, 8)}`;
  const now = Date.now();
  const replay: StoredReplay = { id: randomUUID(), phase: 'pausing', requestedAt: new Date(now).toISOString(), leaseUntil: new Date(now + 60_000).toISOString(), instance: 'b' };
  const tb = world.transport('b');
  const b = await startedStore(world, tb);
  const s = storedPush(name, ['PriceLoadingCompleted'], { delivery: { mode: 'pull', data: 'json' }, replay });
  await b.put(s);
  const onB2 = { store: b, service: serviceOn(b, tb) };
  const ta = holding(world.transport('a'), world.definitions, matches, () => onB(onB2, s.group, replay, name));
  const a = await startedStore(world, ta);
  await waitFor('A to read the subscription', () => a.get(s.group) !== undefined, 10_000, 5);
  return { name, group: s.group, replay, a, b, service: serviceOn(a, ta) };
}

/** The replay's end, as the coordinator on B stores it. */
async function doneOnB(store: SubscriptionStore, group: string, replay: StoredReplay): Promise<void> {
  await storeReplayState(store, group, { ...replay, phase: 'done', finishedAt: new Date().toISOString() });
}

/** What every instance reads in the end: A, B once it read A's last record, and one starting now. */
async function everywhere(world: RaceWorld, r: { a: SubscriptionStore; b: SubscriptionStore; group: string }, expected: Record<string, unknown>): Promise<void> {
  expect(r.a.get(r.group)).toMatchObject(expected);
  // A's last record, not the one it wrote over B's change first (the same generation).
  const last = JSON.stringify(r.a.get(r.group));
  await waitFor('B to read A\'s last record', () => JSON.stringify(r.b.get(r.group)) === last, 10_000, 5);
  expect(r.b.get(r.group)).toMatchObject(expected);
  const fresh = await startedStore(world, world.transport('fresh'));
  expect(fresh.get(r.group)).toMatchObject(expected);
}

/** The cases, as `it`s of the caller's `describe`. */
export function recordRaceCases(world: () => RaceWorld): void {
  it('a PATCH on A as B stores the replay\'s `done`: the patch and `done` both stay (before: `pausing` came back)', async () => {
    const w = world();
    const r = await raced(w, (v) => v.generation === 2, ({ store }, group, replay) => doneOnB(store, group, replay));
    const view = await r.service.update(r.name, { concurrency: 3 });
    expect(view).toMatchObject({ concurrency: 3, generation: 2, replay: { id: r.replay.id, phase: 'done' } });
    await everywhere(w, r, { concurrency: 3, state: 'active', generation: 2, replay: { id: r.replay.id, phase: 'done' } });
  });

  it('the gateway\'s own state (`gone`) set on A as B stores the replay\'s `done`: `gone` and `done` both stay', async () => {
    const w = world();
    const r = await raced(w, (v) => v.state === 'gone', ({ store }, group, replay) => doneOnB(store, group, replay));
    await r.service.setState(r.group, 'gone', 'the sink answered 410');
    await everywhere(w, r, { state: 'gone', stateReason: 'the sink answered 410', generation: 2, replay: { id: r.replay.id, phase: 'done' } });
  });

  it('a PATCH on A as a PATCH on B lands: the one on A applied on top of B\'s (both stay)', async () => {
    const w = world();
    const r = await raced(w, (v) => v.concurrency === 3, async ({ service }, _group, _replay, name) => {
      await service.update(name, { state: 'paused' });
    });
    await r.service.update(r.name, { concurrency: 3 });
    await everywhere(w, r, { concurrency: 3, state: 'paused', generation: 3, replay: { id: r.replay.id, phase: 'pausing' } });
  });

  it('a PATCH on A as B deletes the subscription: 404, and it stays deleted', async () => {
    const w = world();
    const r = await raced(w, (v) => v.generation === 2, async ({ store }, group) => {
      await store.remove(group);
    });
    expect(await caughtAsync(r.service.update(r.name, { concurrency: 3 }))).toMatchObject({ code: 'CEG_NOT_FOUND', details: { field: 'name' } });
    expect(r.a.get(r.group)).toBeUndefined();
    const fresh = await startedStore(w, w.transport('fresh'));
    expect(fresh.get(r.group)).toBeUndefined();
  });
}
