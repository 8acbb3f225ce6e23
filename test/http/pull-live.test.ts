/**
 * Pull delivery while things change under it, on the in-memory transport behind a wrapper that can
 * stall (hang) or fail the broker calls a pull makes (docs/subscriptions.md "Pull delivery"):
 * - an open SSE stream takes a kind added by PATCH (and stops reading a kind removed);
 * - heartbeats go on while a read hangs on a stalled broker, and a retriable read failure inside a
 *   stream is retried (the stream stays open) instead of ending it;
 * - a long-poll and a cursor commit answer 503 CEG_BROKER_UNAVAILABLE (Retry-After) within about
 *   their `wait` (+ the broker grace: createGateway's `pullBrokerGraceMs`, here 1 s instead of the
 *   default PULL_BROKER_GRACE_MS, 5 s) of a stalled broker, not after the client's timeout;
 * - the pull counters of a subscription deleted and created again under its name start over;
 * - a stored pull subscription a connector file shadows (same consumer group) is not pulled nor
 *   committed (409 naming `name`): the file's sink would lose those events.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SubscriptionStore } from '../../src/bus/subscriptions/index.js';
import { CHART_DATA_READY } from '../../src/catalog/generated/index.js';
import { loadConnectors } from '../../src/connectors/index.js';
import { GatewayError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/observability/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { Transport } from '../../src/transport/port.js';
import { structuredPriceEvent, priceLoaded } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { tempDir } from '../unit/connectors/helpers.js';
import { BATCH, post } from './helpers.js';

/** The pull's broker grace this gateway runs with (pullBrokerGraceMs), ms: a fifth of the default, so the stalls below end sooner. */
const GRACE_MS = 1000;

/** The broker calls a stall or a failure applies to (those a pull makes once it is open). */
const AFFECTED = new Set<string | symbol>(['endOffsets', 'offsetsAt', 'commitOffsets']);
let mode: 'ok' | 'hang' | 'fail' = 'ok';
let resume: () => void = () => {};
let resumed = Promise.resolve();

function setMode(m: 'ok' | 'hang' | 'fail'): void {
  if (m === 'hang' && mode !== 'hang') resumed = new Promise((ok) => (resume = ok));
  if (m !== 'hang') resume();
  mode = m;
}

function faulty(inner: Transport): Transport {
  return new Proxy(inner, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      const fn = v as (...a: unknown[]) => unknown;
      if (!AFFECTED.has(prop)) return fn.bind(target);
      return async (...args: unknown[]): Promise<unknown> => {
        if (mode === 'fail') throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'injected: broker unavailable', { retriable: true });
        while (mode === 'hang') await resumed;
        return fn.apply(target, args);
      };
    },
  });
}

let gw: TestGateway;
const dir = tempDir('ceg-pull-live-');
const dec = new TextDecoder();

beforeAll(async () => {
  writeFileSync(join(dir.dir, 'drop.yaml'), 'kind: subscription\nname: shadowed\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: file-drop, sink: { directory: out } }\n');
  const defs = loadConnectors(dir.dir, { environment: {} });
  gw = await startGateway({ stack: false, overrides: { transport: faulty(createMemoryTransport()), pullBrokerGraceMs: GRACE_MS }, subscriptions: defs.flatMap((d) => (d.kind === 'subscription' ? [d.runtime] : [])) });
  await gw.gateway.subscriptionsLoaded();
});
// A test that timed out on a stall leaves its call pending: the next test starts with the broker back.
afterEach(() => setMode('ok'));
afterAll(async () => {
  setMode('ok');
  await gw?.close();
  dir.remove();
});

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

async function call(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

async function create(over: Record<string, unknown> = {}): Promise<string> {
  const name = `live-${randomUUID().slice(0, 8)}`;
  const r = await call('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' }, ...over });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return name;
}

async function publishPrice(): Promise<string> {
  const e = structuredPriceEvent({}, priceLoaded('EUR/USD', 'H1', randomUUID().slice(0, 8)));
  const r = await post(gw.url, [e], BATCH);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return e.id as string;
}

async function publishChart(): Promise<string> {
  const ev = { specversion: '1.0', id: randomUUID(), source: 'urn:partner:test', type: CHART_DATA_READY.eventId, time: '2022-03-15T12:00:03Z', datacontenttype: 'application/json', data: { instrument: 'EUR/USD', timeframe: 'H4', barKey: `EUR-USD_H4__${randomUUID().slice(0, 8)}`, bars: [], series: {}, readyAt: '2022-03-15T12:00:03.123456Z' } };
  const r = await post(gw.url, ev);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return ev.id;
}

/** An SSE stream read in the background. */
interface Sse {
  text(): string;
  /** Resolves once `pred(text)` holds; rejects after `ms`. */
  until(pred: (t: string) => boolean, ms: number): Promise<void>;
  close(): void;
}

async function openSse(path: string): Promise<Sse> {
  const ac = new AbortController();
  const res = await fetch(`${gw.url}${path}`, { signal: ac.signal });
  expect(res.status).toBe(200);
  let text = '';
  const reader = res.body!.getReader();
  const pump = (async (): Promise<void> => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += dec.decode(value, { stream: true });
    }
  })().catch(() => undefined);
  return {
    text: () => text,
    until: async (pred, ms) => {
      const end = Date.now() + ms;
      while (!pred(text)) {
        if (Date.now() > end) throw new Error(`not seen within ${ms} ms; the stream so far:\n${text.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => {
      ac.abort();
      void pump;
    },
  };
}

const ids = (t: string): string[] =>
  t
    .split('\n\n')
    .slice(0, -1)
    .flatMap((m) => m.split('\n').filter((l) => l.startsWith('data: ')))
    .map((l) => (JSON.parse(l.slice(6)) as { id: string }).id);
const heartbeats = (t: string): number => t.split(': heartbeat\n\n').length - 1;

describe('an open SSE stream follows PATCH kinds', () => {
  it('delivers a kind added while it is open (events accepted after the 200), and stops reading a kind removed', async () => {
    const name = await create();
    const sse = await openSse(`/subscriptions/${name}/stream?heartbeat=1`);
    try {
      const p1 = await publishPrice();
      await sse.until((t) => ids(t).includes(p1), 10_000);
      const added = await call('PATCH', `/subscriptions/${name}`, { kinds: ['PriceLoadingCompleted', 'ChartDataReady'] });
      expect(added.status, JSON.stringify(added.body)).toBe(200);
      const c1 = await publishChart();
      await sse.until((t) => ids(t).includes(c1), 10_000);
      const removed = await call('PATCH', `/subscriptions/${name}`, { kinds: ['PriceLoadingCompleted'] });
      expect(removed.status, JSON.stringify(removed.body)).toBe(200);
      const c2 = await publishChart();
      const p2 = await publishPrice();
      await sse.until((t) => ids(t).includes(p2), 10_000);
      expect(ids(sse.text())).not.toContain(c2);
      expect(sse.text()).not.toContain('event: error');
    } finally {
      sse.close();
    }
  }, 40_000);
});

describe('a broker stall or failure during a stream', () => {
  it('heartbeats go on while a read hangs; after the broker is back the stream goes on and delivers', async () => {
    const name = await create();
    const sse = await openSse(`/subscriptions/${name}/stream?heartbeat=1`);
    try {
      await sse.until((t) => heartbeats(t) >= 1, 5_000);
      setMode('hang');
      const before = heartbeats(sse.text());
      // A read hangs now (the next poll round's end offsets); heartbeats are on their own timer.
      await sse.until((t) => heartbeats(t) >= before + 3, 6_000);
      setMode('ok');
      const p = await publishPrice();
      await sse.until((t) => ids(t).includes(p), 10_000 + GRACE_MS);
      expect(sse.text()).not.toContain('event: error');
    } finally {
      setMode('ok');
      sse.close();
    }
  }, 40_000);

  it('a retriable read failure is retried: the stream stays open (no event: error), heartbeats continue, and it delivers once the broker answers', async () => {
    const name = await create();
    const sse = await openSse(`/subscriptions/${name}/stream?heartbeat=1`);
    try {
      await sse.until((t) => heartbeats(t) >= 1, 5_000);
      setMode('fail');
      const before = heartbeats(sse.text());
      await sse.until((t) => heartbeats(t) >= before + 2 || t.includes('event: error'), 6_000);
      expect(sse.text()).not.toContain('event: error');
      setMode('ok');
      const p = await publishPrice();
      await sse.until((t) => ids(t).includes(p) || t.includes('event: error'), 10_000);
      expect(sse.text()).not.toContain('event: error');
      expect(ids(sse.text())).toContain(p);
    } finally {
      setMode('ok');
      sse.close();
    }
  }, 40_000);
});

describe('a pull and a commit during a broker stall', () => {
  it('a long-poll answers 503 CEG_BROKER_UNAVAILABLE with Retry-After within its wait + the broker grace (plus slack), not after the client gives up', async () => {
    const name = await create();
    const first = await call('GET', `/subscriptions/${name}/events?wait=0`);
    expect(first.status).toBe(200);
    const cursor = first.headers.get('ce-gateway-cursor')!;
    setMode('hang');
    try {
      const t0 = Date.now();
      const r = await call('GET', `/subscriptions/${name}/events?wait=1`);
      const took = Date.now() - t0;
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect((r.body as { code: string }).code).toBe('CEG_BROKER_UNAVAILABLE');
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
      // The grace given, not the default (5 s): 1 s of wait + 1 s of grace + 3 s of slack.
      expect(took).toBeLessThan(1000 + GRACE_MS + 3000);

      const t1 = Date.now();
      const c = await call('POST', `/subscriptions/${name}/cursors`, { cursor });
      expect(c.status, JSON.stringify(c.body)).toBe(503);
      expect((c.body as { code: string }).code).toBe('CEG_BROKER_UNAVAILABLE');
      expect(c.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(Date.now() - t1).toBeLessThan(GRACE_MS + 3000);
    } finally {
      setMode('ok');
    }
    // Back: the same calls work again.
    expect((await call('GET', `/subscriptions/${name}/events?wait=0`)).status).toBe(200);
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor })).status).toBe(204);
  }, 40_000);
});

describe('pull counters', () => {
  it('start over for a subscription deleted and created again under the same name', async () => {
    const name = await create();
    await publishPrice();
    const r = await call('GET', `/subscriptions/${name}/events?max=10`);
    expect((r.body as unknown[]).length).toBeGreaterThanOrEqual(1);
    expect(((await call('GET', `/subscriptions/${name}/status`)).body as { delivered: number }).delivered).toBeGreaterThanOrEqual(1);
    expect((await call('DELETE', `/subscriptions/${name}`)).status).toBe(204);
    // Created again before anything asked for the counters: the old ones must not carry over.
    expect((await call('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).status).toBe(201);
    const status = (await call('GET', `/subscriptions/${name}/status`)).body;
    expect(status).toMatchObject({ delivered: 0, lastDeliveryTime: null });
  });
});

describe('a stored pull subscription that a connector file shadows', () => {
  it('is not pulled, streamed nor committed (409 naming name): the file owns the consumer group', async () => {
    // Stored before the file came (the API refuses a name a file declares): a stored record copied under the file's name.
    const created = await call('POST', '/subscriptions?owner=connectors', { name: 'stored-first', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const other = new SubscriptionStore(gw.gateway.transport, 'ce-gateway.subscriptions', silentLogger());
    await other.start();
    const stored = other.get('ce-gateway.sub.connectors.stored-first')!;
    await other.put({ ...stored, name: 'shadowed', group: 'ce-gateway.sub.connectors.shadowed' });
    await other.stop();
    const deadline = Date.now() + 5000;
    let r = await call('GET', '/subscriptions/shadowed/events?owner=connectors');
    // The store of this gateway takes the record from the definitions topic shortly.
    while (r.status === 404 && Date.now() < deadline) {
      await new Promise((ok) => setTimeout(ok, 50));
      r = await call('GET', '/subscriptions/shadowed/events?owner=connectors');
    }
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(JSON.stringify(r.body)).toContain('"name"');
    expect((r.body as { detail: string }).detail).toMatch(/connector file/);
    const s = await call('GET', '/subscriptions/shadowed/stream?owner=connectors');
    expect(s.status).toBe(409);
    // A cursor of the stored one (signed for its group and incarnation) is refused as well.
    const c = await call('POST', '/subscriptions/shadowed/cursors?owner=connectors', { cursor: 'c1.eyJ9.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
    expect(c.status, JSON.stringify(c.body)).toBe(409);
    expect((c.body as { detail: string }).detail).toMatch(/connector file/);
  });
});
