/**
 * Batched push delivery (issue 8, batchpush) on the real stack: one gateway process
 * (`ce-gateway serve` child) on a catalog and a definitions topic of this run's own, real HTTP
 * sinks on 127.0.0.1.
 * - 1,000 posted events of 3 kinds and 20 keys reach a batch subscription exactly once across
 *   batches (`ordering: key` and `ordering: none` side by side), every body is a JSON array in
 *   batched content mode whose signature verifies, batches hold more than one event and never
 *   more than `maxEvents`, per-key order kept for `ordering: key` (array order within a batch).
 * - A sink answering 500 with maxAttempts 3 (ordering none: retries through the retry topic, events
 *   join other batches; ordering key: retries in place): each event tried 3 times, then
 *   dead-lettered with status 500 and the excerpt. A sink answering 400: all dead-lettered after
 *   one attempt. A 503 with Retry-After: the whole batch waits; a 410: the subscription is gone.
 * - Validation of `delivery.batch` (400 naming the field), PATCH adding and removing it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../../../bench/lib/gateway-process.js';
import type { GatewayProcess } from '../../../bench/lib/gateway-process.js';
import { DEAD_LETTER_HEADERS } from '../../../src/bus/subscriber/index.js';
import { indicatorsComputed, priceLoaded, seriesUpdated } from '../../fixtures/events.js';
import { acceptAll, startSink } from '../../helpers/sink.js';
import type { Responder, SinkRequest, TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ownCatalog } from '../consumer/members.js';
import { readDeadLetters } from './dead-letters.js';
import type { OwnCatalog } from '../consumer/members.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const KINDS = [
  { name: 'PriceLoadingCompleted', type: '', data: priceLoaded },
  { name: 'SeriesUpdateCompleted', type: '', data: seriesUpdated },
  { name: 'IndicatorsComputed', type: '', data: indicatorsComputed },
] as const satisfies readonly { name: string; type: string; data: (i: string, t: string, b: string) => unknown }[];
const types = new Map<string, string>();

let cat: OwnCatalog;
let gw: GatewayProcess;
const sinks: TestSink[] = [];

interface Json { readonly [k: string]: unknown }

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Json) };
}

async function post(events: readonly Json[]): Promise<void> {
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
  expect(res.status, await res.text()).toBe(202);
}

function event(kind: (typeof KINDS)[number], key: number, seq: number, subject = 'load'): Json {
  return { specversion: '1.0', id: randomUUID(), source: 'urn:partner:it-batch', type: types.get(kind.name), time: '2026-12-01T10:00:00.000Z', subject, data: kind.data(`K${key}/USD`, 'H1', String(seq).padStart(8, '0')) };
}

async function sink(responder: Responder = acceptAll): Promise<TestSink> {
  const s = await startSink(responder);
  sinks.push(s);
  return s;
}

/** The events of one batched request, in array order. */
function eventsOf(r: SinkRequest): Json[] {
  expect(r.headers['content-type']).toBe('application/cloudevents-batch+json; charset=utf-8');
  const body = JSON.parse(r.body.toString('utf8')) as unknown;
  expect(Array.isArray(body)).toBe(true);
  return body as Json[];
}

async function create(to: TestSink, body: Json): Promise<{ name: string; group: string; secret: string }> {
  const name = uniqueName('batch').replace(/\./g, '-');
  const r = await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: to.url, batch: { maxEvents: 100 } }, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { name, group: r.body.group as string, secret: ((r.body.delivery as { secrets?: string[] }).secrets ?? [''])[0]! };
}

/** Waits until the subscription delivers (probes with subject `probe` until one arrives). */
async function delivering(s: TestSink): Promise<void> {
  let seq = 0;
  await waitFor('the subscription delivering', async () => {
    await post([event(KINDS[0], 0, ++seq, 'probe')]);
    return s.deliveries().length > 0;
  }, 30_000, 500);
}

beforeAll(async () => {
  cat = ownCatalog('it-batch');
  gw = await startGatewayProcess({
    root: ROOT,
    env: {
      ...cat.env(),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error', // dead letters are logged at warn: these tests make many
      SUBSCRIPTIONS_TOPIC: `${uniqueName('it-batch')}.subscriptions`,
      SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      SUBSCRIPTION_IDLE_STOP_MS: '0',
      INSTANCE_ID: 'gw-batch',
    },
    readyTimeoutMs: 90_000,
    preferTsx: true,
  });
  const catalog = (await (await fetch(`${gw.url}/catalog`)).json()) as { kinds: { name: string; eventId: string }[] };
  for (const k of KINDS) types.set(k.name, catalog.kinds.find((c) => c.name === k.name)!.eventId);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.allSettled(sinks.map((s) => s.close()));
  await cat?.close();
});

describe('batched push delivery', () => {
  it('1,000 events of 3 kinds and 20 keys exactly once across batches, each body signed, per-key order for ordering key', async () => {
    const kinds = KINDS.map((k) => k.name);
    const byKey = await sink();
    const unordered = await sink();
    const k = await create(byKey, { kinds, ordering: 'key', concurrency: 50 });
    const n = await create(unordered, { kinds, ordering: 'none', concurrency: 200, delivery: { mode: 'push', url: unordered.url, batch: { maxEvents: 100, maxDelayMs: 20 } } });
    await Promise.all([delivering(byKey), delivering(unordered)]);
    const probes = (s: TestSink): number => s.deliveries().flatMap(eventsOf).filter((e) => e.subject === 'probe').length;

    const sent: Json[] = [];
    for (let seq = 1; sent.length < 1000; seq++) for (const kind of KINDS) for (let key = 0; key < 20 && sent.length < 1000; key++) sent.push(event(kind, key, seq));
    for (let i = 0; i < sent.length; i += 100) await post(sent.slice(i, i + 100));

    for (const [s, sub, maxEvents] of [[byKey, k, 50], [unordered, n, 100]] as const) {
      const loaded = (): Json[] => s.deliveries().flatMap(eventsOf).filter((e) => e.subject === 'load');
      await waitFor(`1,000 events at ${sub.name}`, () => loaded().length >= 1000, 60_000, 200);
      await new Promise((r) => setTimeout(r, 1000)); // a duplicate would show now
      const got = loaded();
      expect(got).toHaveLength(1000);
      expect(new Set(got.map((e) => e.id))).toEqual(new Set(sent.map((e) => e.id)));
      const wh = new Webhook(sub.secret);
      const sizes = s.deliveries().map((r) => {
        wh.verify(r.body, r.headers as Record<string, string>); // throws unless the signature covers this body
        return eventsOf(r).length;
      });
      expect(Math.max(...sizes)).toBeGreaterThan(1); // events were batched
      expect(Math.max(...sizes)).toBeLessThanOrEqual(maxEvents); // `concurrency` (50) bounds the batch below maxEvents (100)
      expect(probes(s)).toBeGreaterThan(0);
    }
    // Per-key order: requests in arrival order, events in array order.
    const lastSeq = new Map<string, number>();
    for (const e of byKey.deliveries().flatMap(eventsOf).filter((x) => x.subject === 'load')) {
      const key = `${String(e.type)}|${String(e.partitionkey)}`;
      const seq = Number((e.data as { barKey: string }).barKey.slice(-8));
      expect(seq, key).toBeGreaterThan(lastSeq.get(key) ?? 0);
      lastSeq.set(key, seq);
    }
    expect(lastSeq.size).toBe(60);
    await api('DELETE', `/subscriptions/${k.name}`);
    await api('DELETE', `/subscriptions/${n.name}`);
  });

  it.each([
    { status: 500, body: 'database on fire', ordering: 'none', attempts: 3 },
    { status: 500, body: 'database on fire', ordering: 'key', attempts: 3 },
    { status: 400, body: 'schema says no', ordering: 'none', attempts: 1 },
  ] as const)('a sink answering $status (ordering $ordering, maxAttempts 3): each event of a batch tried $attempts times, then dead-lettered with status and excerpt', async ({ status, body, ordering, attempts }) => {
    const s = await sink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : { status, body }));
    const { name, group } = await create(s, { ordering, concurrency: 20, retry: { maxAttempts: 3, backoff: { initialMs: 100, factor: 1, maxMs: 5000, jitter: 0 } } });
    // Wait until the member runs: a probe reaches the sink (and is dead-lettered too).
    await delivering(s);
    // Under ordering key a batch holds one event per partition at most: 10 keys spread over 6.
    const events = Array.from({ length: 10 }, (_, key) => event(KINDS[0], key, 1));
    await post(events);
    const dead = await readDeadLetters(group, events.map((e) => e.id));
    const tried = s.deliveries().flatMap(eventsOf);
    expect(s.deliveries().some((r) => eventsOf(r).length > 1)).toBe(true);
    for (const e of events) {
      expect(tried.filter((x) => x.id === e.id)).toHaveLength(attempts);
      const h = dead.get(e.id as string)!;
      expect(h.get(DEAD_LETTER_HEADERS.lastStatus)).toBe(String(status));
      expect(h.get(DEAD_LETTER_HEADERS.responseExcerpt)).toBe(body);
      expect(h.get(DEAD_LETTER_HEADERS.attempts)).toBe(String(attempts));
      expect(h.get(DEAD_LETTER_HEADERS.sink)).toBe(s.url);
    }
    await api('DELETE', `/subscriptions/${name}`);
  });

  it('503 with Retry-After: 1 once: the whole batch waits ≥ 1 s and is delivered on the second attempt; a 410 makes the subscription gone', async () => {
    let refused = false;
    const s = await sink((req) => {
      if (req.method === 'OPTIONS') return acceptAll(req, 0);
      const probe = eventsOf(req).some((e) => e.subject === 'probe');
      if (probe || refused) return { status: 200 };
      refused = true;
      return { status: 503, headers: { 'retry-after': '1' } };
    });
    const { name } = await create(s, { ordering: 'key', concurrency: 20, retry: { maxAttempts: 3, backoff: { initialMs: 50, factor: 1, maxMs: 10_000, jitter: 0 } } });
    await delivering(s);
    const events = Array.from({ length: 10 }, (_, key) => event(KINDS[0], key, 1));
    await post(events);
    const times = (id: unknown): number[] => s.deliveries().filter((r) => eventsOf(r).some((e) => e.id === id)).map((r) => r.atMs);
    // The first request of these events got the 503: its events twice, the others once.
    const refusedIds = (): Set<unknown> => new Set(eventsOf(s.deliveries().find((r) => eventsOf(r).some((e) => e.subject === 'load'))!).map((e) => e.id));
    await waitFor('every event delivered', () => refused && events.every((e) => times(e.id).length >= (refusedIds().has(e.id) ? 2 : 1)), 20_000, 100);
    expect(refusedIds().size).toBeGreaterThan(1);
    for (const id of refusedIds()) {
      const [t1, t2] = times(id);
      expect(t2! - t1!, String(id)).toBeGreaterThanOrEqual(1000);
    }
    await api('DELETE', `/subscriptions/${name}`);

    const gone = await sink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : { status: 410 }));
    const g = await create(gone, { ordering: 'none', concurrency: 20 });
    await post(Array.from({ length: 10 }, (_, key) => event(KINDS[0], key, 2)));
    await waitFor('state gone', async () => (await api('GET', `/subscriptions/${g.name}`)).body.state === 'gone', 20_000, 200);
    await new Promise((r) => setTimeout(r, 1000));
    const after = gone.deliveries().length;
    await post(Array.from({ length: 10 }, (_, key) => event(KINDS[0], key, 3)));
    await new Promise((r) => setTimeout(r, 2000));
    expect(gone.deliveries()).toHaveLength(after);
    await api('DELETE', `/subscriptions/${g.name}`);
  });

  it('refuses bad delivery.batch fields with 400 naming the field; PATCH adds, changes and removes it', async () => {
    const s = await sink();
    const bad: [Json, string][] = [
      [{ maxEvents: 0 }, 'delivery.batch.maxEvents'],
      [{ maxEvents: 1001 }, 'delivery.batch.maxEvents'],
      [{ maxEvents: 1.5 }, 'delivery.batch.maxEvents'],
      [{ maxBytes: 100 }, 'delivery.batch.maxBytes'],
      [{ maxDelayMs: 1001 }, 'delivery.batch.maxDelayMs'],
      [{ maxDelayMs: -1 }, 'delivery.batch.maxDelayMs'],
      [{ maxEvent: 10 }, 'delivery.batch.maxEvent'],
    ];
    for (const [batch, field] of bad) {
      const res = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: uniqueName('bad').replace(/\./g, '-'), kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: s.url, batch } }) });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await res.json()) as { field?: string; violations?: { field: string }[] };
      expect(problem.violations?.map((v) => v.field) ?? [problem.field], JSON.stringify(problem)).toContain(field);
    }
    const name = uniqueName('patch').replace(/\./g, '-');
    expect((await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: s.url } })).status).toBe(201);
    expect(((await api('GET', `/subscriptions/${name}`)).body.delivery as Json).batch).toBeUndefined();
    const added = await api('PATCH', `/subscriptions/${name}`, { delivery: { batch: { maxEvents: 10 } } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(((await api('GET', `/subscriptions/${name}`)).body.delivery as Json).batch).toEqual({ maxEvents: 10, maxBytes: 1_048_576, maxDelayMs: 0 });
    expect((await api('PATCH', `/subscriptions/${name}`, { delivery: { batch: { maxDelayMs: 5000 } } })).status).toBe(400);
    expect((await api('PATCH', `/subscriptions/${name}`, { delivery: { batch: { maxDelayMs: 50 } } })).status).toBe(200);
    expect(((await api('GET', `/subscriptions/${name}`)).body.delivery as Json).batch).toEqual({ maxEvents: 10, maxBytes: 1_048_576, maxDelayMs: 50 });
    expect((await api('PATCH', `/subscriptions/${name}`, { delivery: { batch: null } })).status).toBe(200);
    expect(((await api('GET', `/subscriptions/${name}`)).body.delivery as Json).batch).toBeUndefined();
    await api('DELETE', `/subscriptions/${name}`);
  });
});
