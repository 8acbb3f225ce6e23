/**
 * Issue 9 "Done when" for pull, on the real stack: two gateway processes (`ce-gateway serve`
 * children, one shared SUBSCRIPTION_SECRETS_KEY) on a catalog and a definitions topic of this
 * run's own.
 * - A long-poll alternating between the two gateways, each committing on the other one, receives
 *   every event exactly once (including events written while it polls).
 * - Uncommitted events come back on a pull without a cursor (on either gateway); committed ones never.
 * - Restarting both gateways loses no committed position, and a cursor of before still works.
 * - A forged or foreign cursor is refused with 400 naming `cursor`, on either gateway.
 * - SSE cut mid-stream and resumed on the other gateway with `Last-Event-ID` skips nothing; a
 *   heartbeat comment comes while idle.
 * - `wait` running out answers 200 `[]`.
 * - An SSE stream open on one gateway delivers a kind added by PATCH on the other one meanwhile.
 * - A poison record (a foreign producer's bytes) is dead-lettered to `<group>.dlq` and passed over:
 *   the events behind it on its partition are handed out.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../../../bench/lib/gateway-process.js';
import type { GatewayProcess } from '../../../bench/lib/gateway-process.js';
import { priceLoaded } from '../../fixtures/events.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { DEAD_LETTER_HEADERS } from '../../../src/bus/subscriber/index.js';
import { ownCatalog, rawKafka } from '../consumer/members.js';
import type { OwnCatalog } from '../consumer/members.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const BATCH = 'application/cloudevents-batch+json';

let cat: OwnCatalog;
let env: Record<string, string>;
let gws: [GatewayProcess, GatewayProcess];
let priceType = '';

async function start(): Promise<[GatewayProcess, GatewayProcess]> {
  // One after the other: two first starts registering the same new subjects at once can meet a
  // registry conflict.
  const a = await startGatewayProcess({ root: ROOT, env: { ...env, INSTANCE_ID: 'gw-a' }, readyTimeoutMs: 90_000, preferTsx: true });
  const b = await startGatewayProcess({ root: ROOT, env: { ...env, INSTANCE_ID: 'gw-b' }, readyTimeoutMs: 90_000, preferTsx: true });
  return [a, b];
}

beforeAll(async () => {
  cat = ownCatalog('it-pull');
  env = {
    ...cat.env(),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    SUBSCRIPTIONS_TOPIC: `${uniqueName('it-pull')}.subscriptions`,
    SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
  };
  gws = await start();
  const catalog = (await (await fetch(`${gws[0].url}/catalog`)).json()) as { kinds: { name: string; eventId: string }[] };
  priceType = catalog.kinds.find((k) => k.name === 'PriceLoadingCompleted')!.eventId;
}, 200_000);

afterAll(async () => {
  await Promise.allSettled(gws.map((g) => g.stop()));
  await cat?.close();
});

type Ev = Record<string, unknown> & { id: string };

async function call(gw: GatewayProcess, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: unknown }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

async function pull(gw: GatewayProcess, name: string, q: Record<string, string | number> = {}): Promise<{ events: Ev[]; cursor: string }> {
  const qs = new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const r = await call(gw, 'GET', `/subscriptions/${name}/events${qs === '' ? '' : `?${qs}`}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.headers.get('content-type')).toContain(BATCH);
  return { events: r.body as Ev[], cursor: r.headers.get('ce-gateway-cursor')! };
}

async function commit(gw: GatewayProcess, name: string, cursor: string): Promise<void> {
  const r = await call(gw, 'POST', `/subscriptions/${name}/cursors`, { cursor });
  expect(r.status, JSON.stringify(r.body)).toBe(204);
}

async function create(gw: GatewayProcess): Promise<string> {
  const name = uniqueName('pull').replace(/\./g, '-');
  const r = await call(gw, 'POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  // The other gateway learns of it from the definitions topic, a moment later: a pull or stream
  // there at once was a 404 now and then (seen on kafkajs).
  for (const other of gws) await waitFor(`${name} known to ${other.url}`, async () => (await call(other, 'GET', `/subscriptions/${name}`)).status === 200, 30_000, 100);
  return name;
}

async function publish(gw: GatewayProcess, n: number): Promise<string[]> {
  const events = Array.from({ length: n }, (_, i) => ({
    specversion: '1.0',
    id: randomUUID(),
    source: 'urn:partner:it-pull',
    type: priceType,
    time: '2026-12-01T10:00:00.000Z',
    data: priceLoaded(`Q${i % 13}/USD`, 'H1', String(i).padStart(8, '0')),
  }));
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': BATCH }, body: JSON.stringify(events) });
  expect(res.status, await res.text()).toBe(202);
  return events.map((e) => e.id);
}

const ids = (evs: readonly Ev[]): string[] => evs.map((e) => e.id).sort();

describe('pull across two gateways (real Kafka)', () => {
  it('a long-poll alternating between the gateways, committing on the other one, receives every event once', async () => {
    const [a, b] = gws;
    const name = await create(a);
    const sent = await publish(a, 120);
    const got: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 60 && got.length < 240; i++) {
      const here = gws[i % 2]!;
      const there = gws[(i + 1) % 2]!;
      if (i === 3) sent.push(...(await publish(b, 120))); // written while the client polls
      const r = await pull(here, name, { max: 37, wait: 2, ...(cursor === undefined ? {} : { cursor }) });
      got.push(...r.events.map((e) => e.id));
      await commit(there, name, r.cursor);
      cursor = i % 3 === 2 ? undefined : r.cursor; // now and then start from the committed position
    }
    expect(got.length).toBe(240);
    expect([...got].sort()).toEqual([...sent].sort());
    expect((await pull(a, name, { wait: 0.5 })).events).toEqual([]);
    expect((await pull(b, name)).events).toEqual([]);
  });

  it('uncommitted events come back on a pull without a cursor, committed ones never; both survive a restart of both gateways', async () => {
    const name = await create(gws[0]);
    const sent = await publish(gws[0], 10);
    const onA = await pull(gws[0], name, { max: 100, wait: 5 });
    expect(ids(onA.events)).toEqual([...sent].sort());
    const onB = await pull(gws[1], name, { max: 100, wait: 5 });
    expect(ids(onB.events)).toEqual([...sent].sort());
    const firstFour = await pull(gws[1], name, { max: 4 });
    expect(firstFour.events).toHaveLength(4);
    await commit(gws[0], name, firstFour.cursor);
    const rest = await pull(gws[1], name, { max: 100 });
    expect(ids(rest.events)).toEqual(sent.filter((id) => !firstFour.events.some((e) => e.id === id)).sort());

    await Promise.all(gws.map((g) => g.stop()));
    gws = await start();
    const after = await pull(gws[1], name, { max: 100, wait: 2 });
    expect(ids(after.events)).toEqual(ids(rest.events)); // the commit survived, nothing committed came back
    // A cursor handed out before the restart still works on either gateway.
    expect((await pull(gws[0], name, { cursor: rest.cursor })).events).toEqual([]);
    await commit(gws[0], name, rest.cursor);
    expect((await pull(gws[1], name, { wait: 0.5 })).events).toEqual([]);
  }, 240_000);

  it('refuses forged and foreign cursors with 400 naming cursor on either gateway', async () => {
    const mine = await create(gws[0]);
    const other = await create(gws[1]);
    const foreign = (await pull(gws[1], other)).cursor;
    const good = (await pull(gws[0], mine)).cursor;
    const [p, payload, mac] = good.split('.') as [string, string, string];
    const raised = Buffer.from(Buffer.from(payload, 'base64url').toString('utf8').replace(/"(\d+)"\]/g, '"99999"]')).toString('base64url');
    for (const gw of gws) {
      for (const bad of [foreign, `${p}.${raised}.${mac}`]) {
        const r = await call(gw, 'GET', `/subscriptions/${mine}/events?cursor=${encodeURIComponent(bad)}`);
        expect(r.status).toBe(400);
        expect(r.headers.get('content-type')).toContain('application/problem+json');
        expect((r.body as { code: string; violations: { field: string }[] }).code).toBe('CEG_INVALID_CURSOR');
        expect((r.body as { violations: { field: string }[] }).violations[0]!.field).toBe('cursor');
        expect((await call(gw, 'POST', `/subscriptions/${mine}/cursors`, { cursor: bad })).status).toBe(400);
      }
    }
  });

  it('dead-letters a poison record and hands out the events behind it on its partition', async () => {
    const name = await create(gws[0]);
    const group = `ce-gateway.sub.anonymous.${name}`;
    const producer = rawKafka().producer();
    await producer.connect();
    try {
      const partitions = Array.from({ length: 6 }, (_, p) => p);
      await producer.send({ topic: cat.priceTopic, messages: partitions.map((partition) => ({ partition, key: 'x', value: Buffer.from([0, 0, 0, 0, 99, 1, 2]), headers: { ce_specversion: '1.0', ce_id: `poison-${partition}`, ce_source: 'urn:foreign', ce_type: priceType, 'content-type': 'application/avro' } })) });
    } finally {
      await producer.disconnect();
    }
    const sent = await publish(gws[1], 12);
    const got: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10 && got.length < 12; i++) {
      const r = await pull(gws[i % 2]!, name, { max: 100, wait: 2, ...(cursor === undefined ? {} : { cursor }) });
      got.push(...r.events.map((e) => e.id));
      cursor = r.cursor;
    }
    expect([...got].sort()).toEqual([...sent].sort());
    const dlq = await readAll(`${group}.dlq`);
    expect(new Set(dlq.map((m) => m.headers.ce_id)).size).toBe(6);
    expect(dlq.every((m) => m.headers[DEAD_LETTER_HEADERS.subscription] === group && m.headers[DEAD_LETTER_HEADERS.reason]!.startsWith('poison'))).toBe(true);
  });

  it('answers 200 [] when the wait runs out', async () => {
    const name = await create(gws[1]);
    const t0 = Date.now();
    const r = await pull(gws[1], name, { wait: 1.5 });
    expect(r.events).toEqual([]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1200);
  });

  it('SSE cut mid-stream and resumed on the other gateway with Last-Event-ID skips nothing; heartbeats while idle', async () => {
    const name = await create(gws[0]);
    const sent = await publish(gws[0], 30);
    const first = await stream(gws[0], name, {}, (t) => messages(t).length >= 10);
    const part1 = messages(first).slice(0, 10);
    const rest = await stream(gws[1], name, { 'last-event-id': part1.at(-1)!.id }, (t) => new Set([...part1, ...messages(t)].map((m) => m.event.id)).size >= 30 && t.includes(': heartbeat'));
    const part2 = messages(rest);
    const all = [...part1, ...part2].map((m) => m.event.id);
    expect(new Set(all).size).toBe(all.length); // nothing twice
    expect([...all].sort()).toEqual([...sent].sort()); // nothing skipped
    expect(rest).toContain(': heartbeat\n\n');
  }, 60_000);

  it('an SSE stream open on one gateway delivers a kind added by PATCH on the other while it is open', async () => {
    const name = await create(gws[0]);
    const catalog = (await (await fetch(`${gws[0].url}/catalog`)).json()) as { kinds: { name: string; eventId: string }[] };
    const chartType = catalog.kinds.find((k) => k.name === 'ChartDataReady')!.eventId;
    const chart = { specversion: '1.0', id: randomUUID(), source: 'urn:partner:it-pull', type: chartType, time: '2026-12-01T10:00:00.000Z', datacontenttype: 'application/json', data: { instrument: 'EUR/USD', timeframe: 'H4', barKey: `EUR-USD_H4__${randomUUID().slice(0, 8)}`, bars: [], series: {}, readyAt: '2026-12-01T10:00:00.123456Z' } };
    const [first] = await publish(gws[0], 1);
    let patched: Promise<void> | undefined;
    const text = await stream(gws[1], name, {}, (t) => {
      if (patched === undefined && messages(t).some((m) => m.event.id === first)) {
        patched = (async () => {
          const p = await call(gws[0], 'PATCH', `/subscriptions/${name}`, { kinds: ['PriceLoadingCompleted', 'ChartDataReady'] });
          expect(p.status, JSON.stringify(p.body)).toBe(200);
          const res = await fetch(`${gws[0].url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(chart) });
          expect(res.status, await res.text()).toBe(202);
        })();
      }
      return messages(t).some((m) => m.event.id === chart.id) || t.includes('event: error');
    });
    await patched;
    expect(text).not.toContain('event: error');
    expect(messages(text).map((m) => m.event.id)).toEqual([first, chart.id]);
  }, 60_000);
});

/** Reads an SSE stream (heartbeat 1 s) until `until` holds, then cuts it. */
async function stream(gw: GatewayProcess, name: string, headers: Record<string, string>, until: (text: string) => boolean): Promise<string> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), 30_000);
  const res = await fetch(`${gw.url}/subscriptions/${name}/stream?heartbeat=1`, { headers, signal: ac.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  let text = '';
  const dec = new TextDecoder();
  try {
    const reader = res.body!.getReader();
    while (!until(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
  } catch {
    // cut by the timeout: the assertions say what was missing
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return text;
}

function messages(text: string): { id: string; event: Ev }[] {
  return text
    .split('\n\n')
    .slice(0, -1) // complete messages only: the last piece is unfinished (or empty)
    .filter((m) => m.includes('data: '))
    .map((m) => {
      const lines = m.split('\n');
      return { id: lines.find((l) => l.startsWith('id: '))!.slice(4), event: JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)) as Ev };
    });
}

/** Every record of a topic (headers as text), read with a throw-away group. */
async function readAll(topic: string): Promise<{ headers: Record<string, string> }[]> {
  const kafka = rawKafka();
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const total = ends.reduce((n, e) => n + Number(e.high), 0);
  const out: { headers: Record<string, string> }[] = [];
  if (total === 0) return out;
  const consumer = kafka.consumer({ groupId: uniqueName('it-pull-dlq-reader') });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((done) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        out.push({ headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])) });
        if (out.length >= total) done();
      },
    });
  });
  await consumer.disconnect();
  return out;
}
