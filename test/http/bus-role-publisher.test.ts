/**
 * `serve` with BUS_ROLE=publisher (issue 8, the two-process layout of docs/deploy.md): the instance
 * takes events and serves the subscriptions API, but runs no subscription member, so a push
 * subscription it stores is not delivered from it. The same set-up with the default role delivers
 * (the control: what the publisher role changes, not a slow machine).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { structuredPriceEvent } from '../fixtures/events.js';
import { acceptAll, startSink } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { post } from './helpers.js';

let hub: TestSink;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  hub = await startSink((req, nth) => acceptAll(req, nth));
});
afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.close()));
  await hub?.close();
});

async function pushSubscription(role: 'publisher' | 'both'): Promise<{ gw: TestGateway; path: string; members: () => Promise<number> }> {
  const gw = await startGateway({ stack: false, env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', BUS_ROLE: role, SUBSCRIPTION_IDLE_STOP_MS: '0' } });
  gateways.push(gw);
  await gw.gateway.subscriptionsLoaded();
  const name = `role-${role}-${randomUUID().slice(0, 6)}`;
  const path = `/p/${name}`;
  const res = await fetch(`${gw.url}/subscriptions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: `${hub.url.replace(/\/hook$/, '')}${path}` } }),
  });
  expect(res.status).toBe(201);
  const members = async (): Promise<number> => {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('ce_gateway_subscription_members{'))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  };
  return { gw, path, members };
}

describe('BUS_ROLE=publisher on serve', () => {
  it('the default role delivers a stored push subscription (control)', async () => {
    const { gw, path, members } = await pushSubscription('both');
    await waitFor('a member', async () => ((await members()) > 0 ? true : undefined), 10_000);
    expect((await post(gw.url, structuredPriceEvent({ subject: 'control' }))).status).toBe(202);
    await waitFor('the delivery', () => (hub.deliveries().some((r) => r.path === path && r.method === 'POST') ? true : undefined), 10_000);
  });

  it('publisher: takes the event and stores the subscription, but runs no member and delivers nothing', async () => {
    const { gw, path, members } = await pushSubscription('publisher');
    expect((await post(gw.url, structuredPriceEvent({ subject: 'publisher' }))).status).toBe(202);
    const got = await fetch(`${gw.url}/subscriptions/${path.slice(3)}`);
    expect(got.status).toBe(200);
    // The control delivered within its first second; give this one several.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await members()).toBe(0);
    expect(hub.deliveries().filter((r) => r.path === path)).toHaveLength(0);
  });
});
