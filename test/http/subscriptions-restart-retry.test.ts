/**
 * Members on demand (issue 10) and retries through the retry topic (issue 8, `ordering: none`): a
 * retry parked on the subscription's own retry topic when its gateway stops is delivered by the
 * next gateway without any new event of its kinds. The work check used to watch only the kinds'
 * topics, so such a retry waited until the next event of a kind arrived (found by reading, listed as
 * open in the session notes of 2026-12-04). On the in-memory transport, shared by both gateways as
 * a broker outlives them (the same reconciler and work check as on Kafka); a real HTTP sink on
 * 127.0.0.1.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { Transport } from '../../src/transport/port.js';
import { priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { acceptAll, startSink } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';
import { waitFor } from '../helpers/wait.js';
import { BATCH, post } from './helpers.js';

const IDLE_STOP_MS = 400;
const BACKOFF_MS = 1500;
let transport: Transport;
let sink: TestSink;
const open: TestGateway[] = [];
const env = {
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  SUBSCRIPTION_IDLE_STOP_MS: String(IDLE_STOP_MS),
  SUBSCRIPTION_CHECK_INTERVAL_MS: '100',
  SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
};

beforeAll(async () => {
  transport = createMemoryTransport();
  // The first delivery fails (500); every later one succeeds.
  sink = await startSink((req, nth) => (nth === 1 ? { status: 500, body: 'first attempt' } : acceptAll(req, nth)));
});
afterAll(async () => {
  await Promise.allSettled(open.map((g) => g.close()));
  await sink?.close();
  await transport?.close();
});

async function gateway(): Promise<TestGateway> {
  const g = await startGateway({ stack: false, env, overrides: { transport } });
  open.push(g);
  await g.gateway.subscriptionsLoaded();
  return g;
}

describe('a retry parked when the gateway stops', () => {
  it('is delivered by the next gateway without a new event of its kinds (ordering none, members on demand)', async () => {
    const first = await gateway();
    const name = `restart-${randomUUID().slice(0, 8)}`;
    const group = `ce-gateway.sub.anonymous.${name}`;
    const created = await fetch(`${first.url}/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], ordering: 'none', retry: { maxAttempts: 3, backoff: { initialMs: BACKOFF_MS, factor: 1, maxMs: BACKOFF_MS, jitter: 0 } }, delivery: { mode: 'push', url: sink.url } }),
    });
    expect(created.status, await created.text()).toBe(201);
    const event = structuredPriceEvent({ id: randomUUID() }, priceLoaded('RESTART/USD', 'H1'));
    expect((await post(first.url, [event], BATCH)).status).toBe(202);
    const posts = (): { id: unknown; atMs: number }[] => sink.deliveries().map((r) => ({ id: r.headers['ce-id'], atMs: r.atMs }));
    await waitFor('the first attempt', () => posts().length >= 1, 10_000, 20);
    await waitFor('the retry parked on the retry topic', async () => (await recordCount(first.gateway, `${group}.retry`)) === 1n, 10_000, 20);
    await first.close();
    open.splice(open.indexOf(first), 1);
    const before = posts().length;
    expect(before).toBe(1);

    const second = await gateway();
    await waitFor('the second attempt, from the next gateway', () => posts().length >= 2, BACKOFF_MS + 10_000, 20);
    const got = posts();
    expect(got.map((p) => p.id)).toEqual([event.id, event.id]);
    expect(got[1]!.atMs - got[0]!.atMs).toBeGreaterThanOrEqual(BACKOFF_MS - 20); // the backoff still held
    // Delivered (2xx), so no third attempt and no dead letter.
    await new Promise((r) => setTimeout(r, BACKOFF_MS + 500));
    expect(posts()).toHaveLength(2);
    expect(await recordCount(second.gateway, `${group}.dlq`)).toBe(0n);
  }, 40_000);
});
