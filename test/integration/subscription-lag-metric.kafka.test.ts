/**
 * `ce_gateway_subscription_lag` covers subscriptions with no member on this instance
 * (docs/observability.md): a pull subscription (never a member) and a push subscription whose
 * member stopped while idle and that then holds a backlog (paused, so no member starts for it and
 * the backlog stays put while the test compares) each have their series on the real stack, with
 * the values `GET /subscriptions/{name}/status` answers, and a pull commit lowers the pull's.
 * Before the fix only subscriptions with a running member here had a series.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceLoaded } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startSink } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const BATCH = 'application/cloudevents-batch+json';
const catalog = catalogWithOwnTopics(uniqueName('lagmetric'));
let gw: TestGateway;
let sink: TestSink;
let priceType = '';

interface Status {
  readonly group: string;
  readonly state: string;
  readonly running: boolean;
  readonly lag: { readonly total: number; readonly partitions: readonly { readonly topic: string; readonly partition: number; readonly lag: number | null }[] };
}

beforeAll(async () => {
  sink = await startSink();
  gw = await startGateway({
    stack: true,
    env: {
      CATALOG_DIR: catalog.dir,
      SUBSCRIPTIONS_TOPIC: uniqueName('lagmetric-defs'),
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      // Members stop soon after their work is done: the push subscription becomes idle (no member).
      SUBSCRIPTION_IDLE_STOP_MS: '500',
      SUBSCRIPTION_CHECK_INTERVAL_MS: '200',
    },
  });
  await gw.gateway.subscriptionsLoaded();
  const kinds = ((await (await fetch(`${gw.url}/catalog`)).json()) as { kinds: { name: string; eventId: string }[] }).kinds;
  priceType = kinds.find((k) => k.name === 'PriceLoadingCompleted')!.eventId;
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await sink?.close();
  catalog.cleanup();
}, 60_000);

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; headers: Headers; body: unknown }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

async function status(name: string): Promise<Status> {
  const r = await api('GET', `/subscriptions/${name}/status`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Status;
}

async function publish(n: number): Promise<void> {
  const events = Array.from({ length: n }, (_, i) => ({ specversion: '1.0', id: randomUUID(), source: 'urn:test:lag-metric', type: priceType, time: '2026-12-06T10:00:00.000Z', data: priceLoaded(`LM${i % 7}/USD`, 'H1', String(i).padStart(8, '0')) }));
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': BATCH }, body: JSON.stringify(events) });
  expect(res.status, await res.text()).toBe(202);
}

/** The group's `ce_gateway_subscription_lag` samples on /metrics, by partition (labels exactly issue 15's {subscription,partition}). */
async function lagSeries(group: string): Promise<Map<string, number>> {
  const res = await fetch(`${gw.url}/metrics`);
  expect(res.status).toBe(200);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const m = /^ce_gateway_subscription_lag\{(.*)\} (\S+)$/.exec(line);
    if (m === null) continue;
    const labels = Object.fromEntries([...m[1]!.matchAll(/([a-z]+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
    expect(Object.keys(labels).sort()).toEqual(['partition', 'subscription']);
    if (labels.subscription === group) out.set(labels.partition!, Number(m[2]));
  }
  return out;
}

/** The partitions `/status` has a lag figure for, in the same shape: per partition number, summed over the topics. */
function statusSeries(s: Status): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of s.lag.partitions) if (p.lag !== null) out.set(String(p.partition), (out.get(String(p.partition)) ?? 0) + p.lag);
  return out;
}
const sum = (m: ReadonlyMap<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

describe('ce_gateway_subscription_lag without a member on this instance', () => {
  it('has the series of a pull subscription and of an idle push subscription with a backlog, as /status reads them, and falls after a pull commit', async () => {
    const pullName = `lm-pull-${randomUUID().slice(0, 8)}`;
    const pushName = `lm-push-${randomUUID().slice(0, 8)}`;
    expect((await api('POST', '/subscriptions', { name: pullName, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).status).toBe(201);
    expect((await api('POST', '/subscriptions', { name: pushName, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: sink.url } })).status).toBe(201);

    // The push subscription delivers 3 events, then its member stops while idle: no member, lag 0.
    await publish(3);
    await waitFor('3 deliveries to the sink', () => sink.deliveries().length >= 3, 30_000, 100);
    const idle = await waitFor('the push subscription to be idle with nothing left', async () => {
      const s = await status(pushName);
      return !s.running && s.lag.total === 0 ? s : undefined;
    }, 30_000, 100);
    const idleSeries = await lagSeries(idle.group);
    expect(idleSeries.size).toBeGreaterThan(0);
    expect(idleSeries).toEqual(statusSeries(idle));

    // Paused, it gets a backlog that no member takes (a member would deliver it at once).
    expect((await api('PATCH', `/subscriptions/${pushName}`, { state: 'paused' })).status).toBe(200);
    await waitFor('the push subscription to be paused without a member', async () => {
      const s = await status(pushName);
      return s.state === 'paused' && !s.running;
    }, 30_000, 100);
    await publish(7);

    const push = await status(pushName);
    expect(push.running).toBe(false);
    expect(push.lag.total).toBe(7);
    const pushSeries = await lagSeries(push.group);
    expect(pushSeries).toEqual(statusSeries(push));
    expect(sum(pushSeries)).toBe(7);

    const pull = await status(pullName);
    expect(pull.running).toBe(false);
    expect(pull.lag.total).toBe(10);
    const pullSeries = await lagSeries(pull.group);
    expect(pullSeries).toEqual(statusSeries(pull));
    expect(sum(pullSeries)).toBe(10);

    // A pull of 4 committed: the series fall by 4, still as /status reads them.
    const got = await api('GET', `/subscriptions/${pullName}/events?max=4`);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect((got.body as unknown[]).length).toBe(4);
    expect((await api('POST', `/subscriptions/${pullName}/cursors`, { cursor: got.headers.get('ce-gateway-cursor') })).status).toBe(204);
    const after = await status(pullName);
    expect(after.lag.total).toBe(6);
    const afterSeries = await lagSeries(after.group);
    expect(afterSeries).toEqual(statusSeries(after));
    expect(sum(afterSeries)).toBe(6);
  }, 120_000);
});
