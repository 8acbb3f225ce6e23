/**
 * What the replay audit log holds when a replay does not finish (docs/subscriptions.md "What the
 * audit log holds"): a replay that paused delivery is written with its outcome whatever its end.
 * - `partial`: a subscription whose kinds live on two topics; the commit of the first topic goes
 *   through, the second is refused for good (a non-retriable broker error). Before, nothing was
 *   written: the first topic's offsets had moved and the audit log did not say so.
 * - `failed`: the same refusal at the first topic's commit: paused, nothing moved, written so.
 * - another replay taking over while this one waits after the first topic moved: `partial`, and
 *   the 409 names what moved (it said "nothing was moved by this one").
 * - a request refused by its checks before anything happened (400) is not written; a finished
 *   replay is written as `done`.
 * (In-memory transport; the refusal is injected into the real transport's commit of the second
 * topic's target.)
 */
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReplayCoordinator, ReplayLog } from '../../../../src/bus/subscriptions/index.js';
import type { SubscriptionStore } from '../../../../src/bus/subscriptions/index.js';
import { GatewayError } from '../../../../src/core/errors.js';
import { createLogger, silentLogger } from '../../../../src/observability/index.js';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { Consumption, OutboundRecord, PartitionOffset, Position, ProduceOptions, Transport } from '../../../../src/transport/index.js';
import { caughtAsync } from '../../../helpers/errors.js';
import { startedStoreAndAudit, storedPush } from '../../../helpers/stored-subscription.js';

const name = 'two-topics';
const group = `ce-gateway.sub.anonymous.${name}`;
const topics = ['rao.a', 'rao.b'];

let transport: Transport;
let store: SubscriptionStore;
let audit: ReplayLog;
let stop: () => Promise<void>;

beforeEach(async () => {
  transport = createMemoryTransport();
  await transport.ensureTopics(topics.map((t) => ({ name: t, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' as const })));
  for (const t of topics) {
    await transport.produce(t, [0, 1, 2, 3].map(() => ({ key: null, value: new Uint8Array([1]), headers: [], partition: 0 })));
    await transport.commitOffsets(group, t, [{ partition: 0, offset: 4n }]);
  }
  ({ store, audit, stop } = await startedStoreAndAudit(transport, 'rao'));
  await store.put(storedPush(name, ['A', 'B']));
});

afterEach(async () => {
  await stop();
  await transport.close();
});

/** The transport, refusing for good the commit of `topic`'s replay target (offset 0), as a broker refusing it would. */
function refusingCommitOf(topic: string): Transport {
  return new Proxy(transport, {
    get(target, prop, receiver) {
      if (prop === 'commitOffsets') {
        return async (g: string, t: string, offsets: readonly PartitionOffset[]): Promise<void> => {
          if (t === topic && offsets[0]?.offset === 0n) throw new GatewayError('CEG_FORBIDDEN', 'Kafka refused the commit: GROUP_AUTHORIZATION_FAILED', { retriable: false });
          await target.commitOffsets(g, t, offsets);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

describe('the audit log of a replay that did not finish', () => {
  it('a non-retriable failure after the first topic\'s commit: written as partial, naming what moved and what did not, with the error', async () => {
    const coordinator = new ReplayCoordinator({ store, audit, transport: refusingCommitOf('rao.b'), topicsOf: () => topics, instance: 'here', log: silentLogger() });
    const err = await caughtAsync(coordinator.replay(name, { to: 'earliest' }, 'ops'));
    // The answer keeps the broker's code and says what had moved (not "nothing happened").
    expect(err).toMatchObject({ code: 'CEG_FORBIDDEN', retriable: false, details: { moved: ['rao.a'] } });
    expect(err.message).toBe("Kafka refused the commit: GROUP_AUTHORIZATION_FAILED; the offsets of rao.a had moved already, the other topics' did not: replay again to the same target to finish");
    // What Kafka holds: the first topic moved, the second did not.
    expect(await transport.committedOffsets(group, 'rao.a')).toEqual([{ partition: 0, offset: 0n }]);
    expect(await transport.committedOffsets(group, 'rao.b')).toEqual([{ partition: 0, offset: 4n }]);
    // What the audit log says: the same.
    const entries = await coordinator.list(name);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      by: 'ops',
      to: 'earliest',
      dryRun: false,
      outcome: 'partial',
      partitions: { 'rao.a/0': { from: '4', to: '0', events: 4, skipped: 0 } },
      events: 4,
      skipped: 0,
      notMoved: { 'rao.b/0': { to: '0' } },
      error: { code: 'CEG_FORBIDDEN', message: err.message },
    });
    expect(Object.keys(entries[0]!.partitions)).toEqual(['rao.a/0']);
    await coordinator.settled(); // the `failed` state is written behind the answer too
    expect(store.get(group)?.replay).toMatchObject({ phase: 'failed', reason: err.message });
  });

  it('a failure at the first topic\'s commit: written as failed, nothing moved, the whole plan not moved', async () => {
    const coordinator = new ReplayCoordinator({ store, audit, transport: refusingCommitOf('rao.a'), topicsOf: () => topics, instance: 'here', log: silentLogger() });
    const err = await caughtAsync(coordinator.replay(name, { to: 'earliest' }, 'ops'));
    expect(err).toMatchObject({ code: 'CEG_FORBIDDEN', message: 'Kafka refused the commit: GROUP_AUTHORIZATION_FAILED' });
    expect(err.details).not.toHaveProperty('moved');
    for (const t of topics) expect(await transport.committedOffsets(group, t)).toEqual([{ partition: 0, offset: 4n }]);
    const entries = await coordinator.list(name);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ outcome: 'failed', dryRun: false, partitions: {}, events: 0, skipped: 0, notMoved: { 'rao.a/0': { to: '0' }, 'rao.b/0': { to: '0' } }, error: { code: 'CEG_FORBIDDEN' } });
  });

  it('another replay taking over while it waits after the first topic moved: the 409 and the entry say what moved, never "nothing was moved"', async () => {
    let member: Consumption | undefined;
    // After the first topic's commit: a member joins (the second commit must wait) and another
    // instance's replay writes its pause over this one's.
    const racing: Transport = new Proxy(transport, {
      get(target, prop, receiver) {
        if (prop === 'commitOffsets') {
          return async (g: string, t: string, offsets: readonly PartitionOffset[]): Promise<void> => {
            await target.commitOffsets(g, t, offsets);
            if (member === undefined && t === 'rao.a' && offsets[0]?.offset === 0n) {
              member = await target.consume({ group, topics: ['rao.b'], startFrom: 'latest' }, async () => undefined);
              const current = store.get(group)!;
              await store.put({ ...current, replay: { ...current.replay!, id: 'the-other-replay' } });
            }
          };
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    try {
      const coordinator = new ReplayCoordinator({ store, audit, transport: racing, topicsOf: () => topics, instance: 'here', log: silentLogger() });
      const err = await caughtAsync(coordinator.replay(name, { to: 'earliest' }, 'ops'));
      expect(err).toMatchObject({ code: 'CEG_CONFLICT', details: { moved: ['rao.a'] } });
      expect(err.message).toBe("another replay of this subscription started meanwhile and took over; the offsets of rao.a had moved already, the other topics' did not: replay again to the same target to finish");
      const entries = await coordinator.list(name);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ outcome: 'partial', partitions: { 'rao.a/0': { from: '4', to: '0', events: 4 } }, notMoved: { 'rao.b/0': { to: '0' } }, error: { code: 'CEG_CONFLICT', message: err.message } });
      expect(await transport.committedOffsets(group, 'rao.b')).toEqual([{ partition: 0, offset: 4n }]);
    } finally {
      await member?.stop();
    }
  });

  it('an unexpected failure after the first topic moved: partial, its code CEG_INTERNAL, its text kept out of the entry owners read', async () => {
    const failing: Transport = new Proxy(transport, {
      get(target, prop, receiver) {
        if (prop === 'commitOffsets') {
          return async (g: string, t: string, offsets: readonly PartitionOffset[]): Promise<void> => {
            if (t === 'rao.b' && offsets[0]?.offset === 0n) throw new TypeError('internal detail: socket 10.1.2.3:9092 state');
            await target.commitOffsets(g, t, offsets);
          };
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const coordinator = new ReplayCoordinator({ store, audit, transport: failing, topicsOf: () => topics, instance: 'here', log: silentLogger() });
    await expect(coordinator.replay(name, { to: 'earliest' }, 'ops')).rejects.toThrow(TypeError);
    const entries = await coordinator.list(name);
    expect(entries[0]).toMatchObject({ outcome: 'partial', partitions: { 'rao.a/0': { events: 4 } }, notMoved: { 'rao.b/0': { to: '0' } }, error: { code: 'CEG_INTERNAL' } });
    expect(JSON.stringify(entries)).not.toContain('10.1.2.3');
  });

  it('a finished replay is written as done; a request refused before anything happened (400) is not written', async () => {
    const coordinator = new ReplayCoordinator({ store, audit, transport, topicsOf: () => topics, instance: 'here', log: silentLogger() });
    expect(await caughtAsync(coordinator.replay(name, { to: { 'rao.c/0': 1 } }, 'ops'))).toMatchObject({ code: 'CEG_INVALID_REPLAY', details: { field: 'to.rao.c/0' } });
    const done = await coordinator.replay(name, { to: 'earliest' }, 'ops');
    expect(done).toMatchObject({ outcome: 'done', events: 8 });
    expect(done).not.toHaveProperty('notMoved');
    expect(done).not.toHaveProperty('error');
    expect((await coordinator.list(name)).map((e) => e.outcome)).toEqual(['done']);
  });
});

/**
 * The transport with its produce to `topic` held: each waits until the gate opens, then goes
 * through (`fail`: is refused as by a broker that is down). `entered` resolves at the first.
 */
function holdingProduceTo(topic: string, fail = false): { transport: Transport; entered: Promise<void>; open: () => void } {
  let open!: () => void;
  let enter!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const held: Transport = new Proxy(transport, {
    get(target, prop, receiver) {
      if (prop === 'produce') {
        return async (t: string, records: readonly OutboundRecord[], opts?: ProduceOptions): Promise<readonly Position[]> => {
          if (t === topic) {
            enter();
            await gate;
            if (fail) throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'kafka: connect ECONNREFUSED', { retriable: true });
          }
          return await target.produce(t, records, opts);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { transport: held, entered, open };
}

describe('the audit entry of a failed replay is written behind its answer', () => {
  // Before, the answer waited for the entry's write (with the broker down: up to its 10 s
  // read-back): with the write held until the answer came, these never answered (a deadlock).
  it('the error is answered while the entry is still being written; the entry lands afterwards', async () => {
    const auditTopic = 'rao.subscriptions.replays.held';
    const held = holdingProduceTo(auditTopic);
    const heldAudit = new ReplayLog(held.transport, auditTopic, silentLogger());
    await heldAudit.start();
    try {
      const coordinator = new ReplayCoordinator({ store, audit: heldAudit, transport: refusingCommitOf('rao.a'), topicsOf: () => topics, instance: 'here', log: silentLogger() });
      const answer = coordinator.replay(name, { to: 'earliest' }, 'ops');
      // The entry's write is released only once the replay answered.
      const released = answer.then(held.open, held.open);
      const err = await caughtAsync(answer);
      expect(err).toMatchObject({ code: 'CEG_FORBIDDEN', retriable: false });
      await held.entered;
      expect(coordinator.background.pending).toBe(1);
      // The stored state says failed once written, behind the answer too (replay-state-race.test.ts:
      // a retry on this instance is taken meanwhile).
      await coordinator.settled();
      expect(store.get(group)?.replay).toMatchObject({ phase: 'failed' });
      await released;
      await coordinator.background.settled();
      expect(coordinator.background).toMatchObject({ pending: 0, failures: 0 });
      const entries = await coordinator.list(name);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ outcome: 'failed', by: 'ops', error: { code: 'CEG_FORBIDDEN' } });
    } finally {
      await heldAudit.stop();
    }
  });

  it('a write that fails behind the answer is logged at error and counted, never an unhandled rejection', async () => {
    const auditTopic = 'rao.subscriptions.replays.down';
    const held = holdingProduceTo(auditTopic, true);
    const heldAudit = new ReplayLog(held.transport, auditTopic, silentLogger());
    await heldAudit.start();
    const lines: string[] = [];
    const out = new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) });
    try {
      const coordinator = new ReplayCoordinator({ store, audit: heldAudit, transport: refusingCommitOf('rao.a'), topicsOf: () => topics, instance: 'here', log: createLogger({ level: 'info', destination: out }) });
      const answer = coordinator.replay(name, { to: 'earliest' }, 'ops');
      const released = answer.then(held.open, held.open);
      expect(await caughtAsync(answer)).toMatchObject({ code: 'CEG_FORBIDDEN' });
      await released;
      await coordinator.background.settled();
      expect(coordinator.background).toMatchObject({ pending: 0, failures: 1 });
      const logged = lines.map((l) => JSON.parse(l) as { level: number; msg: string; subscription?: string; err?: string });
      expect(logged.filter((l) => l.msg === 'replay: could not write its failure to the audit log')).toEqual([expect.objectContaining({ level: 50, subscription: group, err: 'kafka: connect ECONNREFUSED' })]);
      expect(await heldAudit.list(group)).toEqual([]);
    } finally {
      await heldAudit.stop();
    }
  });
});
