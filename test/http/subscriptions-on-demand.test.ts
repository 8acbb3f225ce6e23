/**
 * Issue 10 ("Hundreds of subscriptions"), on the in-memory adapters (the same reconciler as on
 * Kafka): an active subscription has a consumer-group member only while its group has work. Idle
 * subscriptions wait without one; records of a kind wake exactly the subscriptions of that kind's
 * topic; an idle member stops and the next records are delivered once, in order per key, from the
 * group's commits; a record waiting for its next attempt keeps its member (the retry budget is not
 * reset); counters add up over members. Real HTTP sinks on 127.0.0.1 (one server, a path per
 * subscription).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceLoaded, seriesUpdated, structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { acceptAll, startSink } from '../helpers/sink.js';
import type { SinkRequest, TestSink } from '../helpers/sink.js';
import { waitFor } from '../helpers/wait.js';
import { BATCH, fetchJson, post } from './helpers.js';
import type { Answer } from './helpers.js';

const IDLE_STOP_MS = 400;
const SERIES_UPDATE_KIND_NAME = 'SeriesUpdateCompleted';
let gw: TestGateway;
let hub: TestSink;
let base: string;
let seriesType: string;

beforeAll(async () => {
  gw = await startGateway({ stack: false, env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTION_IDLE_STOP_MS: String(IDLE_STOP_MS), SUBSCRIPTION_CHECK_INTERVAL_MS: '100' } });
  await gw.gateway.subscriptionsLoaded();
  hub = await startSink((req, nth) => (req.method !== 'OPTIONS' && req.path.startsWith('/failing/') ? { status: 500, body: `attempt ${nth}` } : acceptAll(req, nth)));
  base = hub.url.replace(/\/hook$/, '');
  seriesType = gw.gateway.catalog.byName(SERIES_UPDATE_KIND_NAME)!.eventId;
});
afterAll(async () => {
  await gw?.close();
  await hub?.close();
});

function api(method: string, path: string, body?: unknown): Promise<Answer> {
  return fetchJson(`${gw.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

async function metric(name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}
const members = async (): Promise<{ running: number; idle: number }> => ({
  running: await metric('ce_gateway_subscription_members', 'state="running"'),
  idle: await metric('ce_gateway_subscription_members', 'state="idle"'),
});

const at = (path: string): SinkRequest[] => hub.deliveries().filter((r) => r.path === path);
const priceEvent = (key: number, seq: number): Record<string, unknown> => structuredPriceEvent({ id: randomUUID() }, priceLoaded(`K${key}/USD`, 'H1', String(seq).padStart(8, '0')));

describe('subscriptions on demand', () => {
  const run = randomUUID().slice(0, 6);
  const price = Array.from({ length: 8 }, (_, i) => `od-${run}-p${i}`);
  const series = Array.from({ length: 16 }, (_, i) => `od-${run}-s${i}`);

  it('idle subscriptions have no member; records of one kind wake only its subscriptions, delivered once in order per key; idle members stop and the next records come once from the commits', async () => {
    for (const name of price) expect((await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: `${base}/p/${name}` } })).status).toBe(201);
    for (const name of series) expect((await api('POST', '/subscriptions', { name, kinds: [SERIES_UPDATE_KIND_NAME], delivery: { mode: 'push', url: `${base}/s/${name}` } })).status).toBe(201);
    await waitFor('24 idle subscriptions', async () => (await members()).idle === 24);
    expect((await members()).running).toBe(0);

    const first = Array.from({ length: 12 }, (_, i) => priceEvent(i % 3, i + 1));
    expect((await post(gw.url, first, BATCH)).status).toBe(202);
    let peak = 0;
    await waitFor('12 events at each price subscription', async () => {
      peak = Math.max(peak, (await members()).running);
      return price.every((n) => at(`/p/${n}`).length >= 12);
    }, 10_000, 20);
    expect(peak).toBeLessThanOrEqual(price.length); // the series subscriptions never got a member
    for (const n of price) {
      const got = at(`/p/${n}`);
      expect(got.map((r) => r.headers['ce-id'])).toHaveLength(12);
      expect(new Set(got.map((r) => r.headers['ce-id']))).toEqual(new Set(first.map((e) => e.id)));
      for (let k = 0; k < 3; k++) {
        const key = `K${k}-USD_H1`;
        const mine = got.filter((r) => r.headers['ce-partitionkey'] === key).map((r) => r.headers['ce-id']);
        expect(mine).toEqual(first.filter((_, i) => i % 3 === k).map((e) => e.id));
      }
    }
    expect(series.every((n) => at(`/s/${n}`).length === 0)).toBe(true);

    await waitFor('every member stopped after the idle period', async () => (await members()).running === 0 && (await members()).idle === 24, IDLE_STOP_MS * 20, 50);

    const second = Array.from({ length: 6 }, (_, i) => priceEvent(i % 3, 100 + i));
    const seriesOne = { ...structuredPriceEvent({ id: randomUUID(), type: seriesType }, { ...seriesUpdated('EUR/USD', 'H1', '00000001') }) };
    expect((await post(gw.url, [...second, seriesOne], BATCH)).status).toBe(202);
    await waitFor('the next events at every subscription', async () => price.every((n) => at(`/p/${n}`).length >= 18) && series.every((n) => at(`/s/${n}`).length >= 1), 10_000, 20);
    await new Promise((r) => setTimeout(r, 300)); // a redelivery would show now
    for (const n of price) expect(at(`/p/${n}`).slice(12).map((r) => r.headers['ce-id'])).toEqual(expect.arrayContaining(second.map((e) => e.id)));
    for (const n of price) expect(at(`/p/${n}`)).toHaveLength(18); // nothing of the first round again
    for (const n of series) expect(at(`/s/${n}`).map((r) => r.headers['ce-id'])).toEqual([seriesOne.id]);
    // Counters add up over the members of a subscription (two members so far for each price one).
    expect(await metric('ce_gateway_subscription_records_total', `subscription="ce-gateway.sub.anonymous.${price[0]!}",outcome="handled"`)).toBe(18);
    for (const n of [...price, ...series]) expect((await api('DELETE', `/subscriptions/${n}`)).status).toBe(204);
  });

  it('a member started again after an idle stop does not run the handshake again (once per URL and instance)', async () => {
    const name = `od-${run}-hs`;
    const path = `/hs/${name}`;
    expect((await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: `${base}${path}` } })).status).toBe(201);
    const handshakes = (): number => hub.requests.filter((r) => r.method === 'OPTIONS' && r.path === path).length;
    for (let round = 1; round <= 3; round++) {
      expect((await post(gw.url, [priceEvent(1, round)], BATCH)).status).toBe(202);
      await waitFor(`delivery ${round}`, () => at(path).length === round, 10_000, 20);
      await waitFor('the member stopped after the idle period', async () => (await members()).running === 0, IDLE_STOP_MS * 20, 50);
    }
    // Three members in turn, one handshake.
    expect(handshakes()).toBe(1);
    expect((await api('DELETE', `/subscriptions/${name}`)).status).toBe(204);
  });

  it('a record waiting for its next attempt keeps its member: exactly maxAttempts attempts, then the dead letter, then idle', async () => {
    const name = `od-${run}-retry`;
    const retry = { maxAttempts: 3, backoff: { initialMs: IDLE_STOP_MS * 2, factor: 1, maxMs: 10_000, jitter: 0 } };
    expect((await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], retry, delivery: { mode: 'push', url: `${base}/failing/${name}` } })).status).toBe(201);
    const e = priceEvent(1, 1);
    expect((await post(gw.url, [e], BATCH)).status).toBe(202);
    await waitFor('three attempts', () => at(`/failing/${name}`).length >= 3, 15_000, 20);
    const group = `ce-gateway.sub.anonymous.${name}`;
    await waitFor('the dead letter', async () => (await metric('ce_gateway_subscription_records_total', `subscription="${group}",outcome="dead_lettered"`)) === 1, 5000, 50);
    await new Promise((r) => setTimeout(r, IDLE_STOP_MS * 3));
    expect(at(`/failing/${name}`)).toHaveLength(3);
    await waitFor('member stopped', async () => (await members()).running === 0, IDLE_STOP_MS * 20, 50);
    // The status covers the subscription on this instance, not only a running member: the idle
    // stop keeps the dead letter, the retries and the last failure (breaker report: it zeroed them).
    const status = await api('GET', `/subscriptions/${name}/status`);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ running: false, deadLettered: 1, retried: 2, delivered: 0, lastDeliveryTime: null });
    expect((status.body.lastError as { reason: string } | null)?.reason).toMatch(/500/);
    expect((await api('DELETE', `/subscriptions/${name}`)).status).toBe(204);
  });

  it('status keeps what idle-stopped members delivered: counts add up over members, lastDeliveryTime stays', async () => {
    const name = `od-${run}-counts`;
    expect((await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: `${base}/c/${name}` } })).status).toBe(201);
    const group = `ce-gateway.sub.anonymous.${name}`;
    for (const round of [1, 2]) {
      expect((await post(gw.url, Array.from({ length: 5 }, (_, i) => priceEvent(i, round * 10 + i)), BATCH)).status).toBe(202);
      await waitFor(`round ${round} delivered`, () => at(`/c/${name}`).length >= round * 5, 10_000, 20);
      await waitFor(`round ${round}: member stopped`, async () => (await api('GET', `/subscriptions/${name}/status`)).body.running === false, IDLE_STOP_MS * 20, 50);
    }
    const status = await api('GET', `/subscriptions/${name}/status`);
    expect(status.body).toMatchObject({ running: false, delivered: 10, deadLettered: 0, lastError: null });
    expect(Date.parse(String(status.body.lastDeliveryTime))).toBeGreaterThan(Date.now() - 60_000);
    expect(await metric('ce_gateway_subscription_records_total', `subscription="${group}",outcome="handled"`)).toBe(10);
    expect((await api('DELETE', `/subscriptions/${name}`)).status).toBe(204);
  });
});
