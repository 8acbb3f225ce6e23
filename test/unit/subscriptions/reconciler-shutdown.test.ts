/**
 * A member start that the gateway's shutdown overtakes (a push member whose start was waiting on
 * the broker when SIGTERM's drain began: Reconciler.stop) starts nothing and is not logged as
 * started: stopped before it subscribes, or — when its subscribe was in flight — left at once and
 * never registered, its sink told it is inactive. Said at info, no error. The in-memory transport
 * (same group semantics as Kafka: transport contract suite) under a real subscriber and codec; the
 * host holds the start at a known point.
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { Publisher, RecordPublisher } from '../../../src/bus/publisher/index.js';
import { subscribe } from '../../../src/bus/subscriber/index.js';
import type { Subscription } from '../../../src/bus/subscriber/index.js';
import { Reconciler } from '../../../src/bus/subscriptions/index.js';
import type { RunSpec, SinkContext, SubscribeHost } from '../../../src/bus/subscriptions/index.js';
import { topicsOfKinds } from '../../../src/catalog/lookup.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { createLogger, silentLogger } from '../../../src/observability/index.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type { Transport } from '../../../src/transport/port.js';
import { priceLoaded } from '../../fixtures/events.js';
import { waitFor } from '../../helpers/wait.js';
import { codecFixture } from '../bus/helpers.js';

const policy = retryPolicy({ maxAttempts: 3, initialDelayMs: 0, factor: 1, maxDelayMs: 0, jitter: 0 });

const spec: RunSpec = {
  group: 'push-racing-stop',
  kinds: ['PriceLoadingCompleted'],
  filters: [],
  ordering: 'key',
  retry: { maxAttempts: 3, backoff: { initialMs: 10, factor: 2, maxMs: 100, jitter: 0 } },
  // A member that joined would deliver the event published before it.
  startFrom: 'earliest',
  state: 'active',
  concurrency: 1,
};

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly subscription?: string;
}

let transport: Transport | undefined;
afterEach(async () => {
  await transport?.close();
  transport = undefined;
});

/** A reconciler on the in-memory transport whose member start waits at `holdAt` until released. */
async function racing(holdAt: 'partition look-up' | 'subscribe') {
  const fx = await codecFixture();
  const t = createMemoryTransport();
  transport = t;
  await t.ensureTopics(fx.catalog.topics);
  const records = new RecordPublisher(t, { queueCapacity: 10, maxBatch: 10, retry: policy }, silentLogger());
  const publisher = new Publisher(fx.codec, records, { service: 'pdsp', instance: 'host-1', dataschemaBase: 'http://x/schemas/ids/' });
  await publisher.publish('PriceLoadingCompleted', priceLoaded('RACE/USD', 'H1'))!.delivered;

  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held = false;
  const joined: Subscription[] = [];
  const host: SubscribeHost = {
    partitionCount: async (topic) => {
      if (holdAt === 'partition look-up') {
        held = true;
        await gate;
      }
      return t.partitionCount(topic);
    },
    topicsOf: (kinds) => topicsOfKinds(fx.catalog, kinds),
    subscribe: async (o) => {
      if (holdAt === 'subscribe') {
        held = true;
        await gate;
      }
      const s = await subscribe(t, fx.codec, silentLogger(), { ...o, retry: o.retry ?? policy });
      joined.push(s);
      return s;
    },
  };
  const delivered: string[] = [];
  let ctx: SinkContext | undefined;
  let sinkClosed = false;
  const text: string[] = [];
  const out = new PassThrough();
  out.on('data', (c: Buffer) => text.push(c.toString('utf8')));
  const r = new Reconciler<RunSpec>(
    host,
    (_d, c) => {
      ctx = c;
      return {
        handler: (e) => {
          delivered.push(e.attributes.id);
        },
        update: () => undefined,
        close: () => {
          sinkClosed = true;
          return Promise.resolve();
        },
      };
    },
    createLogger({ level: 'debug', destination: out }),
    () => Promise.resolve(),
  );
  r.apply(new Map([[spec.group, spec]]));
  await waitFor(`the start held at its ${holdAt}`, () => held, 5000, 5);
  const lines = (): LogLine[] => text.join('').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as LogLine);
  return { r, release, lines, delivered, joined, ctx: () => ctx, sinkClosed: () => sinkClosed };
}

const STARTED = 'subscription started on this instance';
const NOT_STARTED = 'subscription not started on this instance: shutting down';

describe('a member start overtaken by the shutdown', () => {
  it('while it looks up partitions: it never subscribes, delivers nothing, and says so at info instead of "started"', async () => {
    const g = await racing('partition look-up');
    const stopping = g.r.stop();
    g.release();
    await stopping;
    expect(g.joined).toEqual([]);
    expect(g.delivered).toEqual([]);
    expect([...g.r.running().keys()]).toEqual([]);
    const lines = g.lines();
    expect(lines.filter((l) => l.msg === STARTED)).toEqual([]);
    expect(lines.filter((l) => l.msg === NOT_STARTED).map((l) => [l.level, l.subscription])).toEqual([[30, spec.group]]);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  });

  it('while its subscribe is in flight: the member is left at once, never registered, its sink inactive and closed', async () => {
    const g = await racing('subscribe');
    const stopping = g.r.stop();
    g.release();
    await stopping;
    expect(g.joined).toHaveLength(1);
    // Left: its done settles (a member still running would keep it pending).
    await expect(g.joined[0]!.done).resolves.toBeUndefined();
    expect([...g.r.running().keys()]).toEqual([]);
    // The sink sends nothing (a webhook sink holds its records while inactive), and is released.
    expect(g.ctx()!.active!()).toBe(false);
    expect(g.sinkClosed()).toBe(true);
    const lines = g.lines();
    expect(lines.filter((l) => l.msg === STARTED)).toEqual([]);
    expect(lines.filter((l) => l.msg === NOT_STARTED).map((l) => [l.level, l.subscription])).toEqual([[30, spec.group]]);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  });
});

describe('a member that fails', () => {
  it('is restarted, and a sink whose close then rejects is a warning with context, not an unhandled rejection', async () => {
    const fx = await codecFixture();
    const t = createMemoryTransport();
    transport = t;
    await t.ensureTopics(fx.catalog.topics);
    let failFirst!: (err: Error) => void;
    let starts = 0;
    const host: SubscribeHost = {
      partitionCount: (topic) => t.partitionCount(topic),
      topicsOf: (kinds) => topicsOfKinds(fx.catalog, kinds),
      subscribe: async (o) => {
        const s = await subscribe(t, fx.codec, silentLogger(), { ...o, retry: o.retry ?? policy });
        starts += 1;
        if (starts > 1) return s;
        // The first member's consumer fails (as on a broker failure the subscriber gives up on).
        const failed = new Promise<void>((_resolve, reject) => (failFirst = reject));
        return { ...s, done: failed };
      },
    };
    let sinks = 0;
    const text: string[] = [];
    const out = new PassThrough();
    out.on('data', (c: Buffer) => text.push(c.toString('utf8')));
    const r = new Reconciler<RunSpec>(
      host,
      () => {
        sinks += 1;
        const first = sinks === 1;
        return { handler: () => undefined, update: () => undefined, close: () => (first ? Promise.reject(new Error('sink close refused')) : Promise.resolve()) };
      },
      createLogger({ level: 'debug', destination: out }),
      () => Promise.resolve(),
    );
    r.apply(new Map([[spec.group, spec]]));
    await waitFor('the first member started', () => starts === 1 && r.running().has(spec.group), 5000, 5);
    failFirst(new Error('consumer crashed'));
    // Restarted after the reconciler's first backoff (500 ms).
    await waitFor('the member restarted', () => starts === 2 && r.running().has(spec.group), 5000, 5);
    await r.stop();
    const lines = text.join('').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as LogLine & { err?: string });
    expect(lines.filter((l) => l.level === 50).map((l) => [l.msg, l.err])).toEqual([['subscription member stopped on a failure; restarting it', 'consumer crashed']]);
    expect(lines.filter((l) => l.level === 40).map((l) => [l.msg, l.subscription, l.err])).toEqual([
      ['subscription sink did not close cleanly after its member failed', spec.group, 'sink close refused'],
    ]);
  });
});
