/**
 * Pull delivery (issue 9) on the in-memory adapters (the embedded default runs the same code as
 * Kafka; the two-gateway behaviour on the real broker is test/integration/subscriptions/pull.kafka.test.ts):
 * pull subscriptions as resources, long-poll answers and their media type, cursors (read ahead,
 * commit, forged and foreign ones refused), uncommitted events coming back, filters, `data: avro`,
 * `partitions=` splitting a subscription, poison records dead-lettered and passed over, bounds on
 * the parameters, and SSE (one event per message, `id:` = cursor, heartbeat, `Last-Event-ID`);
 * the byte budget of one answer (`maxBytes`, default 4 MiB), a pause or delete ending a wait in
 * progress, and cursors that have one spelling only.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_HEADERS } from '../../src/bus/subscriber/index.js';
import { MAX_PULL_BYTES, cursorSigner, deriveCursorKey } from '../../src/bus/subscriptions/pull/index.js';
import { developmentKey } from '../../src/bus/subscriptions/index.js';
import { CHART_DATA_READY } from '../../src/catalog/generated/index.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, structuredPriceEvent, priceLoaded } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, post, readTopic } from './helpers.js';

let gw: TestGateway;
const dec = new TextDecoder();

beforeAll(async () => {
  gw = await startGateway({ stack: false, env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } });
  await gw.gateway.subscriptionsLoaded();
});
afterAll(async () => {
  await gw?.close();
});

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

type Ev = Record<string, unknown> & { id: string };

async function pull(name: string, q = ''): Promise<{ events: Ev[]; cursor: string }> {
  const r = await call('GET', `/subscriptions/${name}/events${q === '' ? '' : `?${q}`}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.headers.get('content-type')).toBe(`${BATCH}; charset=utf-8`);
  const cursor = r.headers.get('ce-gateway-cursor');
  expect(cursor).toMatch(/^c1\./);
  return { events: r.body as Ev[], cursor: cursor! };
}

async function create(over: Record<string, unknown> = {}): Promise<string> {
  const name = `pull-${randomUUID().slice(0, 8)}`;
  const r = await call('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' }, ...over });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return name;
}

async function publish(n: number, over: (i: number) => Record<string, unknown> = () => ({})): Promise<string[]> {
  const events = Array.from({ length: n }, (_, i) => structuredPriceEvent(over(i), priceLoaded(`P${i % 7}/USD`, 'H1', String(i).padStart(8, '0'))));
  const r = await post(gw.url, events, BATCH);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return events.map((e) => e.id as string);
}

/** The field a problem names (its first violation). */
const fieldOf = (body: unknown): string | undefined => (body as { violations?: { field?: string }[] }).violations?.[0]?.field;

const cursorOf = (r: { cursor: string }): string => encodeURIComponent(r.cursor);

describe('pull subscriptions as resources', () => {
  it('creates one without sink or secrets and shows its delivery', async () => {
    const name = await create();
    const r = await call('GET', `/subscriptions/${name}`);
    expect(r.status).toBe(200);
    expect((r.body as { delivery: unknown }).delivery).toEqual({ mode: 'pull', data: 'json' });
    const bad = await call('POST', '/subscriptions', { name: `pull-${randomUUID().slice(0, 8)}`, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull', secrets: ['whsec_x'] } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('delivery.secrets');
  });

  it('takes a PATCH of its filters and data at the next pull', async () => {
    const name = await create();
    const p = await call('PATCH', `/subscriptions/${name}`, { filters: [{ exact: { subject: 'only-this' } }], delivery: { data: 'avro' } });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    expect((p.body as { delivery: unknown }).delivery).toEqual({ mode: 'pull', data: 'avro' });
    const ids = await publish(4, (i) => ({ subject: i === 2 ? 'only-this' : 'other' }));
    const r = await pull(name, 'max=100');
    expect(r.events.map((e) => e.id)).toEqual([ids[2]]);
    expect(r.events[0]!.datacontenttype).toBe('application/avro');
  });

  it('refuses to change delivery.mode', async () => {
    const name = await create();
    const r = await call('PATCH', `/subscriptions/${name}`, { delivery: { mode: 'push', url: 'http://127.0.0.1:1/x' } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('delivery.mode');
  });
});

describe('GET /subscriptions/{name}/events', () => {
  it('answers [] with a cursor when nothing is there, after the wait', async () => {
    const name = await create();
    const t0 = Date.now();
    const r = await pull(name, 'wait=0.6');
    expect(r.events).toEqual([]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
  });

  it('hands out uncommitted events again, continues after a cursor, and never again once committed', async () => {
    const name = await create();
    const ids = await publish(5);
    const first = await pull(name, 'max=3');
    expect(first.events).toHaveLength(3);
    const ev = first.events[0]!;
    expect(ev.specversion).toBe('1.0');
    expect(ev.type).toBe(PRICE_LOADING_COMPLETED);
    expect(ev.datacontenttype).toBe('application/json');
    expect((ev.data as { instrument: string }).instrument).toMatch(/^P\d\/USD$/);
    // Without a cursor: the same events again (nothing committed).
    const again = await pull(name, 'max=3');
    expect(again.events.map((e) => e.id).sort()).toEqual(first.events.map((e) => e.id).sort());
    // With the cursor: the rest.
    const rest = await pull(name, `max=10&cursor=${cursorOf(first)}`);
    expect([...first.events, ...rest.events].map((e) => e.id).sort()).toEqual([...ids].sort());
    expect((await pull(name, `cursor=${cursorOf(rest)}`)).events).toEqual([]);
    // Commit the first cursor: a pull without one starts after it.
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: first.cursor })).status).toBe(204);
    expect((await pull(name, 'max=10')).events.map((e) => e.id).sort()).toEqual(rest.events.map((e) => e.id).sort());
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: rest.cursor })).status).toBe(204);
    expect((await pull(name, 'max=10')).events).toEqual([]);
  });

  it("its status counts what pulls handed out on this instance (not a member's zeros): delivered, the last delivery's time, nothing retried, no member running", async () => {
    const name = await create();
    const before = (await call('GET', `/subscriptions/${name}/status`)).body;
    expect(before).toMatchObject({ running: false, delivered: 0, retried: 0, deadLettered: 0, lastDeliveryTime: null });
    await publish(4);
    const first = await pull(name, 'max=3');
    const second = await pull(name, 'max=10'); // no cursor: the same events again, and the fourth
    const status = (await call('GET', `/subscriptions/${name}/status`)).body as { delivered: number; lastDeliveryTime: string | null; running: boolean; retried: number };
    expect(status.delivered).toBe(first.events.length + second.events.length);
    expect(status.delivered).toBeGreaterThanOrEqual(7);
    expect(status).toMatchObject({ running: false, retried: 0 });
    expect(Date.parse(status.lastDeliveryTime!)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('answers once an event arrives during the wait', async () => {
    const name = await create();
    const waiting = pull(name, 'wait=10');
    await new Promise((r) => setTimeout(r, 300));
    const [id] = await publish(1);
    const r = await waiting;
    expect(r.events.map((e) => e.id)).toEqual([id]);
  });

  it('applies the subscription filters and moves the cursor past what they refuse', async () => {
    const name = await create({ filters: [{ exact: { subject: 'keep' } }] });
    const ids = await publish(6, (i) => ({ subject: i % 2 === 0 ? 'keep' : 'drop' }));
    const r = await pull(name, 'max=100');
    expect(r.events.map((e) => e.id).sort()).toEqual(ids.filter((_, i) => i % 2 === 0).sort());
    expect((await pull(name, `cursor=${cursorOf(r)}`)).events).toEqual([]);
  });

  it('writes Avro data as data_base64 for data: avro', async () => {
    const name = await create({ delivery: { mode: 'pull', data: 'avro' } });
    await publish(1);
    const [ev] = (await pull(name)).events;
    expect(ev!.datacontenttype).toBe('application/avro');
    expect(typeof ev!.data_base64).toBe('string');
    expect(Buffer.from(ev!.data_base64 as string, 'base64')[0]).toBe(0); // Confluent frame: magic byte 0
    expect(ev!.data).toBeUndefined();
  });

  it('splits a subscription between clients with partitions=', async () => {
    const name = await create();
    const ids = await publish(20);
    const partitions = await gw.gateway.transport.partitionCount(PRICE_TOPIC);
    const half = Array.from({ length: partitions }, (_, p) => p);
    const a = await pull(name, `max=100&partitions=${half.filter((p) => p % 2 === 0).join(',')}`);
    const b = await pull(name, `max=100&partitions=${half.filter((p) => p % 2 === 1).join(',')}`);
    const seen = [...a.events, ...b.events].map((e) => e.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.sort()).toEqual([...ids].sort());
    expect(a.events.length).toBeGreaterThan(0);
    expect(b.events.length).toBeGreaterThan(0);
    // Committing one half leaves the other half's events uncommitted.
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: a.cursor })).status).toBe(204);
    expect((await pull(name, 'max=100')).events.map((e) => e.id).sort()).toEqual(b.events.map((e) => e.id).sort());
  });

  it('dead-letters a poison record, passes over it, and hands out the events behind it', async () => {
    const name = await create();
    const group = `ce-gateway.sub.anonymous.${name}`;
    await gw.gateway.transport.produce(PRICE_TOPIC, [{ key: new TextEncoder().encode('P0-USD_H1'), partition: 0, value: new Uint8Array([0, 0, 0, 0, 99, 1, 2]), headers: [['ce_specversion', new TextEncoder().encode('1.0')], ['ce_id', new TextEncoder().encode('poison-1')], ['ce_source', new TextEncoder().encode('urn:x')], ['ce_type', new TextEncoder().encode(PRICE_LOADING_COMPLETED)], ['content-type', new TextEncoder().encode('application/avro')]] }]);
    const ids = await publish(4);
    const r = await pull(name, 'max=100');
    expect(r.events.map((e) => e.id).sort()).toEqual([...ids].sort());
    const dlq = await readTopic(gw.gateway.transport, `${group}.dlq`);
    expect(dlq).toHaveLength(1);
    const h = new Map(dlq[0]!.headers.map(([n, v]) => [n, dec.decode(v)]));
    expect(h.get(DEAD_LETTER_HEADERS.subscription)).toBe(group);
    expect(h.get(DEAD_LETTER_HEADERS.reason)).toMatch(/^poison/);
    expect(h.get('ce_id')).toBe('poison-1');
    // Pulls that pass over it again without a commit hand out the same events and do not write it
    // again (it was written once per pull before).
    for (let i = 0; i < 2; i++) expect((await pull(name, 'max=100')).events.map((e) => e.id).sort()).toEqual([...ids].sort());
    expect(await readTopic(gw.gateway.transport, `${group}.dlq`)).toHaveLength(1);
    // Counted: what was handed out, passed over and dead-lettered, and the commits.
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: r.cursor })).status).toBe(204);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toContain(`ce_gateway_pull_records_total{subscription="${group}",outcome="dead_lettered"} 1`);
    expect(metrics).toContain(`ce_gateway_pull_records_total{subscription="${group}",outcome="delivered"} 12`);
    expect(metrics).toContain(`ce_gateway_pull_records_total{subscription="${group}",outcome="skipped"} 2`);
    expect(metrics).toContain(`ce_gateway_pull_commits_total{subscription="${group}"} 1`);
    // Served by requests only: no consumer-group member runs it on this instance.
    expect(metrics).not.toContain(`ce_gateway_subscription_up{subscription="${group}"}`);
  });

  // The counters went only when something read them (a scrape); now at the delete
  // (test/unit/bus/subscriptions/pull-stats-forget.test.ts shows it without any read).
  it('a deleted pull subscription has no counters in /metrics any more; created again under its name it counts from zero', async () => {
    const name = await create();
    const group = `ce-gateway.sub.anonymous.${name}`;
    await publish(3);
    const r = await pull(name, 'max=100');
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: r.cursor })).status).toBe(204);
    const before = await (await fetch(`${gw.url}/metrics`)).text();
    expect(before).toContain(`ce_gateway_pull_commits_total{subscription="${group}"} 1`);
    expect((await call('DELETE', `/subscriptions/${name}`)).status).toBe(204);
    const after = await (await fetch(`${gw.url}/metrics`)).text();
    expect(after).not.toContain(`subscription="${group}"`);
    expect((await call('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).status).toBe(201);
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: (await pull(name, 'max=1')).cursor })).status).toBe(204);
    expect(await (await fetch(`${gw.url}/metrics`)).text()).toContain(`ce_gateway_pull_commits_total{subscription="${group}"} 1`);
  });

  it('pulls at the same time write a poison record to the dead-letter topic once; a subscription deleted and created again under its name writes its own copy', async () => {
    const enc = new TextEncoder();
    const poisonId = `poison-${randomUUID().slice(0, 8)}`;
    const name = await create();
    const group = `ce-gateway.sub.anonymous.${name}`;
    await gw.gateway.transport.produce(PRICE_TOPIC, [{ key: enc.encode('P0-USD_H1'), partition: 0, value: new Uint8Array([0, 0, 0, 0, 99, 1, 2]), headers: [['ce_specversion', enc.encode('1.0')], ['ce_id', enc.encode(poisonId)], ['ce_source', enc.encode('urn:x')], ['ce_type', enc.encode(PRICE_LOADING_COMPLETED)], ['content-type', enc.encode('application/avro')]] }]);
    const ids = await publish(3);
    const answers = await Promise.all(Array.from({ length: 4 }, () => pull(name, 'max=100')));
    for (const a of answers) expect(a.events.map((e) => e.id).sort()).toEqual([...ids].sort());
    const copies = async (): Promise<number> => (await readTopic(gw.gateway.transport, `${group}.dlq`)).filter((r) => r.headers.some(([n, v]) => n === 'ce_id' && dec.decode(v) === poisonId)).length;
    expect(await copies()).toBe(1);
    // Deleted and created again (reading from the earliest offset): another subscription, which
    // dead-letters the record for itself.
    expect((await call('DELETE', `/subscriptions/${name}`)).status).toBe(204);
    const again = await call('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' }, start: 'earliest' });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect((await pull(name, 'max=1000')).events.map((e) => e.id)).toEqual(expect.arrayContaining(ids));
    expect(await copies()).toBe(2);
  });

  it.each([
    ['max=0', 'max'],
    ['max=1001', 'max'],
    ['max=ten', 'max'],
    ['wait=31', 'wait'],
    ['wait=-1', 'wait'],
    ['wait=1e3', 'wait'],
    ['partitions=a,b', 'partitions'],
    ['partitions=0,0', 'partitions'],
    ['partitions=999', 'partitions'],
    ['colour=blue', 'colour'],
    ['max=1&max=2', 'max'],
  ])('refuses %s with a problem naming %s', async (q, field) => {
    const name = await create();
    const r = await call('GET', `/subscriptions/${name}/events?${q}`);
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect((r.body as { code: string }).code).toBe('CEG_INVALID_PARAMETER');
    expect(fieldOf(r.body)).toBe(field);
  });

  it('refuses forged and foreign cursors with 400 naming cursor, on pull and on commit', async () => {
    const mine = await create();
    const other = await create();
    const good = (await pull(mine)).cursor;
    const foreign = (await pull(other)).cursor;
    const [p, payload, mac] = good.split('.') as [string, string, string];
    // A client raising its own offsets: the payload changes, the signature does not.
    const raised = Buffer.from(Buffer.from(payload, 'base64url').toString('utf8').replace(/"(\d+)"\]/g, '"999"]')).toString('base64url');
    const flipped = mac.slice(0, -2) + (mac.at(-2) === 'A' ? 'B' : 'A') + mac.at(-1)!;
    for (const bad of [foreign, `${p}.${raised}.${mac}`, `${p}.${payload}.${flipped}`, 'c1.x.y', 'nonsense']) {
      const r = await call('GET', `/subscriptions/${mine}/events?cursor=${encodeURIComponent(bad)}`);
      expect(r.status, bad).toBe(400);
      expect((r.body as { code: string }).code).toBe('CEG_INVALID_CURSOR');
      expect(fieldOf(r.body)).toBe('cursor');
      const c = await call('POST', `/subscriptions/${mine}/cursors`, { cursor: bad });
      expect(c.status, bad).toBe(400);
      expect(fieldOf(c.body)).toBe('cursor');
    }
    expect((await call('POST', `/subscriptions/${mine}/cursors`, {})).status).toBe(400);
    const extra = await call('POST', `/subscriptions/${mine}/cursors`, { cursor: good, extra: 1 });
    expect(extra.status).toBe(400);
    expect((extra.body as { code: string }).code).toBe('CEG_MALFORMED_REQUEST'); // a body's member, not a query parameter
    expect(fieldOf(extra.body)).toBe('extra');
  });

  it('refuses a cursor signed with a key derived from the well-known development key (the development cursor key is random per run): no replay without the permission', async () => {
    const name = await create();
    const view = (await call('GET', `/subscriptions/${name}`)).body as { group: string; createdAt: string };
    // What a partner could compute if cursors were signed with the public development key: offset 0.
    const forged = cursorSigner(deriveCursorKey(developmentKey())).sign({ group: view.group, createdAt: view.createdAt }, [{ topic: PRICE_TOPIC, partition: 0, offset: 0n }]);
    for (const r of [await call('GET', `/subscriptions/${name}/events?cursor=${encodeURIComponent(forged)}`), await call('POST', `/subscriptions/${name}/cursors`, { cursor: forged })]) {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect((r.body as { code: string }).code).toBe('CEG_INVALID_CURSOR');
    }
    // The gateway's own cursors still work.
    const { cursor } = await pull(name);
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor })).status).toBe(204);
  });

  it('answers 409 to a commit while someone else holds a member in the group', async () => {
    const name = await create();
    const cursor = (await pull(name)).cursor;
    const member = await gw.gateway.transport.consume({ group: `ce-gateway.sub.anonymous.${name}`, topics: [PRICE_TOPIC] }, () => Promise.resolve());
    try {
      const r = await call('POST', `/subscriptions/${name}/cursors`, { cursor });
      expect(r.status).toBe(409);
      expect((r.body as { code: string }).code).toBe('CEG_CONFLICT');
    } finally {
      await member.stop();
    }
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor })).status).toBe(204);
  });

  it('refuses push subscriptions (409), unknown ones (404) and other methods (405)', async () => {
    const push = `push-${randomUUID().slice(0, 8)}`;
    // Paused: the sink is never called.
    const c = await call('POST', '/subscriptions', { name: push, kinds: ['PriceLoadingCompleted'], state: 'paused', delivery: { mode: 'push', url: 'http://127.0.0.1:1/hook', handshake: false } });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    const r = await call('GET', `/subscriptions/${push}/events`);
    expect(r.status).toBe(409);
    expect(fieldOf(r.body)).toBe('delivery.mode');
    expect((await call('GET', '/subscriptions/no-such-sub/events')).status).toBe(404);
    const m = await call('DELETE', `/subscriptions/${push}/events`);
    expect(m.status).toBe(405);
    expect(m.headers.get('allow')).toBe('GET');
    expect((await fetch(`${gw.url}/subscriptions/${push}/stream`, { method: 'HEAD' })).status).toBe(405);
  });
});

describe('pull semantics, property-based', () => {
  it('any sequence of pulls (continuing or fresh) and commits: nothing committed comes back, and draining hands out every event', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('continue' as const), max: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('fresh' as const), max: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('commit' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 10 }), fc.integer({ min: 1, max: 12 }), async (ops, n) => {
        const name = await create();
        const sent = await publish(n);
        const committed = new Set<string>();
        let chain: { cursor: string | undefined; ids: string[] } = { cursor: undefined, ids: [] };
        const seen = new Set<string>();
        for (const o of ops) {
          if (o.kind === 'commit') {
            if (chain.cursor === undefined) continue;
            expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: chain.cursor })).status).toBe(204);
            for (const id of chain.ids) committed.add(id);
            continue;
          }
          if (o.kind === 'fresh') chain = { cursor: undefined, ids: [] };
          const r = await pull(name, `max=${o.max}${chain.cursor === undefined ? '' : `&cursor=${encodeURIComponent(chain.cursor)}`}`);
          for (const e of r.events) {
            expect(committed.has(e.id), 'a committed event came back').toBe(false);
            expect(chain.ids.includes(e.id), 'an event twice in one cursor chain').toBe(false);
            seen.add(e.id);
          }
          chain = { cursor: r.cursor, ids: [...chain.ids, ...r.events.map((e) => e.id)] };
        }
        // Drain from the committed position: exactly what was not committed, once each.
        const rest: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          const r = await pull(name, `max=5${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
          if (r.events.length === 0) break;
          rest.push(...r.events.map((e) => e.id));
          cursor = r.cursor;
        }
        expect(rest.sort()).toEqual(sent.filter((id) => !committed.has(id)).sort());
      }),
      { numRuns: 12 },
    );
  }, 60_000);
});

/** Reads an SSE stream until `until` says stop; returns the raw text. */
async function readStream(path: string, headers: Record<string, string>, until: (text: string) => boolean, timeoutMs = 8000): Promise<{ text: string; contentType: string | null }> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  const res = await fetch(`${gw.url}${path}`, { headers, signal: ac.signal });
  expect(res.status).toBe(200);
  let text = '';
  try {
    const reader = res.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
      if (until(text)) break;
    }
  } catch {
    // aborted by the timeout: the caller's assertions say what was missing
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return { text, contentType: res.headers.get('content-type') };
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

describe('GET /subscriptions/{name}/stream', () => {
  it('sends one event per message with the cursor as id, a heartbeat while idle, and resumes after Last-Event-ID', async () => {
    const name = await create();
    const ids = await publish(6);
    const first = await readStream(`/subscriptions/${name}/stream?heartbeat=1`, {}, (t) => messages(t).length >= 3);
    expect(first.contentType).toBe('text/event-stream; charset=utf-8');
    const got = messages(first.text).slice(0, 3);
    // Cut after the third message; resume from its id.
    const last = got.at(-1)!.id;
    const second = await readStream(`/subscriptions/${name}/stream?heartbeat=1`, { 'last-event-id': last }, (t) => messages(t).length >= 3 && t.includes(': heartbeat'));
    const rest = messages(second.text);
    expect([...got, ...rest].map((m) => m.event.id).sort()).toEqual([...ids].sort());
    expect(second.text).toContain(': heartbeat\n\n');
    // SSE does not commit: a pull without a cursor still sees everything; committing the last id empties it.
    expect((await pull(name, 'max=100')).events).toHaveLength(6);
    expect((await call('POST', `/subscriptions/${name}/cursors`, { cursor: rest.at(-1)!.id })).status).toBe(204);
    expect((await pull(name, 'max=100')).events).toEqual([]);
  });

  it('refuses a forged Last-Event-ID before the stream starts', async () => {
    const name = await create();
    const r = await call('GET', `/subscriptions/${name}/stream`, undefined, { 'last-event-id': 'c1.eyJ9.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
    expect(r.status).toBe(400);
    expect(fieldOf(r.body)).toBe('cursor');
  });
});

describe('shutdown', () => {
  it('answers a waiting long-poll and ends a stream when the gateway closes, instead of holding the shutdown up', async () => {
    const own = await startGateway({ stack: false });
    await own.gateway.subscriptionsLoaded();
    const name = `pull-${randomUUID().slice(0, 8)}`;
    const c = await fetch(`${own.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
    expect(c.status).toBe(201);
    const poll = fetch(`${own.url}/subscriptions/${name}/events?wait=30`);
    const stream = await fetch(`${own.url}/subscriptions/${name}/stream?heartbeat=60`);
    const ended = (async () => {
      const reader = stream.body!.getReader();
      while (!(await reader.read()).done);
      return true;
    })();
    await new Promise((r) => setTimeout(r, 300)); // both are waiting now
    const t0 = Date.now();
    await own.close();
    const answer = await poll;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual([]);
    expect(answer.headers.get('ce-gateway-cursor')).toMatch(/^c1\./);
    expect(await ended).toBe(true);
    expect(Date.now() - t0).toBeLessThan(10_000); // far below the 30 s wait and the 60 s heartbeat
  });
});

/** One long-poll with its raw body (to measure what was written), parsed too. */
async function pullRaw(name: string, q: string): Promise<{ bytes: number; events: Ev[]; cursor: string }> {
  const res = await fetch(`${gw.url}/subscriptions/${name}/events?${q}`);
  const body = Buffer.from(await res.arrayBuffer());
  expect(res.status, body.toString('utf8').slice(0, 300)).toBe(200);
  return { bytes: body.length, events: JSON.parse(body.toString('utf8')) as Ev[], cursor: res.headers.get('ce-gateway-cursor')! };
}

/** Follows cursors from the committed positions until an answer is empty; every answer's body size is checked against `budget`. */
async function drain(name: string, q: string, budget: number): Promise<{ ids: string[]; answers: string[][] }> {
  const ids: string[] = [];
  const answers: string[][] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 200; i++) {
    const r = await pullRaw(name, `${q}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    if (r.events.length === 0) return { ids, answers };
    // The bound: at most `budget` bytes of body, unless the answer is one event larger than it.
    if (r.events.length > 1) expect(r.bytes, `answer of ${r.events.length} events`).toBeLessThanOrEqual(budget);
    answers.push(r.events.map((e) => e.id));
    ids.push(...r.events.map((e) => e.id));
    cursor = r.cursor;
  }
  throw new Error('no end of the subscription after 200 answers');
}

describe('the byte budget of one answer (maxBytes)', () => {
  it('stops before the event that would pass maxBytes of body, sends a larger event alone, and the cursors hand out every event once, in order', async () => {
    const name = await create();
    // ~630 bytes of JSON each: two fit in 1500 bytes, three do not. Sizes vary; multi-byte characters
    // and characters JSON escapes (`"` and `\` are 2 bytes written) make the body's byte size differ
    // from the string's length and from the event's own size; event 9 (~1,830 bytes) is over the budget alone.
    const subjects = Array.from({ length: 24 }, (_, i) => (i === 9 ? `big-${'"'.repeat(600)}` : `s${i}-${'ü\\"€'.repeat(i % 4)}`));
    const sent = await publish(subjects.length, (i) => ({ subject: subjects[i] }));
    const { ids, answers } = await drain(name, 'max=1000&maxBytes=1500', 1500);
    expect(new Set(ids).size).toBe(ids.length); // once
    expect([...ids].sort()).toEqual([...sent].sort()); // every event
    expect(answers.length).toBeGreaterThan(3); // the budget cut answers …
    expect(answers.some((a) => a.length > 1)).toBe(true); // … without degenerating to one event each
    expect(answers.length).toBeLessThan(sent.length);
    expect(answers.find((a) => a.includes(sent[9]!))).toEqual([sent[9]]); // larger than the budget: alone, not stuck
    // In order: within a partition (one instrument key), the order they were written in.
    const byId = new Map(sent.map((id, i) => [id, i]));
    for (let k = 0; k < 7; k++) {
      const got = ids.filter((id) => byId.get(id)! % 7 === k).map((id) => byId.get(id)!);
      expect(got.length).toBeGreaterThan(0);
      expect(got).toEqual([...got].sort((a, b) => a - b));
    }
  });

  it('bounds an answer to 4 MiB by default, even for max=1000 of large documents', async () => {
    const name = await create({ kinds: ['ChartDataReady'] });
    // 28,000 doubles: ~250 KB of Avro (the kind's bound is 256 KiB), ~540 KB of JSON each; ten are over 5 MiB.
    const series = Array.from({ length: 28_000 }, (_, i) => Math.sin(i) / 3);
    const sent: string[] = [];
    for (let i = 0; i < 10; i++) {
      const ev = { specversion: '1.0', id: randomUUID(), source: 'urn:partner:test', type: CHART_DATA_READY.eventId, time: '2022-03-15T12:00:03Z', datacontenttype: 'application/json', data: { instrument: 'EUR/USD', timeframe: 'H4', barKey: `EUR-USD_H4__2203${String(i).padStart(4, '0')}`, bars: [], series: { SMA20: series }, readyAt: '2022-03-15T12:00:03.123456Z' } };
      const r = await post(gw.url, ev);
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      sent.push(ev.id);
    }
    const first = await pullRaw(name, 'max=1000');
    expect(first.events.length).toBeGreaterThan(1);
    expect(first.events.length).toBeLessThan(10);
    expect(first.bytes).toBeLessThanOrEqual(MAX_PULL_BYTES);
    const { ids } = await drain(name, 'max=1000', MAX_PULL_BYTES);
    expect(ids).toEqual(sent); // one key: one partition, in the order written
  }, 30_000);

  it.each([['maxBytes=1023'], ['maxBytes=4194305'], ['maxBytes=1e6'], ['maxBytes=']])('refuses %s with a problem naming maxBytes', async (q) => {
    const name = await create();
    const r = await call('GET', `/subscriptions/${name}/events?${q}`);
    expect(r.status).toBe(400);
    expect(fieldOf(r.body)).toBe('maxBytes');
  });
});

describe('a pause or delete during a wait', () => {
  it('answers a waiting long-poll 409 naming state once the subscription is paused, without the event written after', async () => {
    const name = await create();
    const t0 = Date.now();
    const waiting = call('GET', `/subscriptions/${name}/events?wait=10`);
    await new Promise((r) => setTimeout(r, 300));
    expect((await call('PATCH', `/subscriptions/${name}`, { state: 'paused' })).status).toBe(200);
    await publish(1);
    const r = await waiting;
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect((r.body as { code: string }).code).toBe('CEG_CONFLICT');
    expect(fieldOf(r.body)).toBe('state');
    expect(Date.now() - t0).toBeLessThan(5000); // the pause ended the wait, not the 10 s
    // Resumed: the event is still there for the next pull (nothing was passed over).
    expect((await call('PATCH', `/subscriptions/${name}`, { state: 'active' })).status).toBe(200);
    expect((await pull(name)).events).toHaveLength(1);
  });

  it('answers a waiting long-poll 404 once the subscription is deleted', async () => {
    const name = await create();
    const waiting = call('GET', `/subscriptions/${name}/events?wait=10`);
    await new Promise((r) => setTimeout(r, 300));
    expect((await call('DELETE', `/subscriptions/${name}`)).status).toBe(204);
    await publish(1);
    const r = await waiting;
    expect(r.status).toBe(404);
  });

  it('ends an SSE stream with an error message (409, state) when the subscription is paused, without the event written after', async () => {
    const name = await create();
    const [before] = await publish(1);
    let paused = false;
    const read = readStream(`/subscriptions/${name}/stream?heartbeat=5`, {}, (t) => {
      if (!paused && messages(t.split('event: error')[0]!).length >= 1) {
        paused = true;
        void (async () => {
          expect((await call('PATCH', `/subscriptions/${name}`, { state: 'paused' })).status).toBe(200);
          await publish(1);
        })();
      }
      return t.includes('event: error');
    });
    const { text } = await read;
    expect(messages(text.split('event: error')[0]!).map((m) => m.event.id)).toEqual([before]);
    const error = text.split('\n\n').find((m) => m.startsWith('event: error'));
    expect(error).toBeDefined();
    const problem = JSON.parse(error!.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as { status: number; code: string };
    expect(problem.status).toBe(409);
    expect(problem.code).toBe('CEG_CONFLICT');
  });
});

describe('cursors have one spelling', () => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  it('refuses a cursor whose last MAC character has its spare bits set (400), on pull and on commit; the canonical one works', async () => {
    const name = await create();
    await publish(12);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 3 }), async (max, spare) => {
        const good = (await pull(name, `max=${max}`)).cursor;
        // 43 characters carry 258 bits for 32 bytes: the last character's low 2 bits are spare (zero when canonical).
        const last = alphabet.indexOf(good.at(-1)!);
        expect(last & 3).toBe(0);
        const variant = good.slice(0, -1) + alphabet[last | spare]!;
        const r = await call('GET', `/subscriptions/${name}/events?cursor=${encodeURIComponent(variant)}`);
        expect(r.status).toBe(400);
        expect((r.body as { code: string }).code).toBe('CEG_INVALID_CURSOR');
        expect(fieldOf(r.body)).toBe('cursor');
        const c = await call('POST', `/subscriptions/${name}/cursors`, { cursor: variant });
        expect(c.status).toBe(400);
        expect((c.body as { code: string }).code).toBe('CEG_INVALID_CURSOR');
        expect((await call('GET', `/subscriptions/${name}/events?cursor=${encodeURIComponent(good)}`)).status).toBe(200);
      }),
      { numRuns: 15 },
    );
  });
});
