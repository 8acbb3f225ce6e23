/**
 * The scenario of "a retry parked when the gateway stops" (issue 8 retries through the retry topic,
 * issue 10 members on demand), for any transport: a push subscription with `ordering: none` whose
 * sink fails the first delivery; the retry is parked on `<group>.retry`; the gateway stops; the next
 * gateway (same transport, same definitions) must deliver it without any new event of its kinds.
 * The work check used to watch only the kinds' topics, so the retry waited for the next event.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount } from './gateway.js';
import type { TestGateway } from './gateway.js';
import { acceptAll, startSink } from './sink.js';
import { waitFor } from './wait.js';

/** Backoff of the retry, ms: the restart happens inside it. */
export const PARKED_RETRY_BACKOFF_MS = 1500;

/** Runs the scenario; `start` starts a gateway on the shared transport and definitions, loaded and listening. */
export async function expectParkedRetryDelivered(start: () => Promise<TestGateway>, name = `restart-${randomUUID().slice(0, 8)}`): Promise<void> {
  // The first delivery fails (500); every later one succeeds.
  const sink = await startSink((req, nth) => (nth === 1 ? { status: 500, body: 'first attempt' } : acceptAll(req, nth)));
  const open = new Set<TestGateway>();
  try {
    const first = await start();
    open.add(first);
    const group = `ce-gateway.sub.anonymous.${name}`;
    const created = await fetch(`${first.url}/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], ordering: 'none', retry: { maxAttempts: 3, backoff: { initialMs: PARKED_RETRY_BACKOFF_MS, factor: 1, maxMs: PARKED_RETRY_BACKOFF_MS, jitter: 0 } }, delivery: { mode: 'push', url: sink.url } }),
    });
    expect(created.status, await created.text()).toBe(201);
    const event = structuredPriceEvent({ id: randomUUID() }, priceLoaded('RESTART/USD', 'H1'));
    const posted = await fetch(`${first.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify([event]) });
    expect(posted.status, await posted.text()).toBe(202);
    const posts = (): { id: unknown; atMs: number }[] => sink.deliveries().map((r) => ({ id: r.headers['ce-id'], atMs: r.atMs }));
    await waitFor('the first attempt', () => posts().length >= 1, 20_000, 20);
    await waitFor('the retry parked on the retry topic', async () => (await recordCount(first.gateway, `${group}.retry`)) === 1n, 20_000, 20);
    await first.close();
    open.delete(first);
    expect(posts()).toHaveLength(1);

    const second = await start();
    open.add(second);
    await waitFor('the second attempt, from the next gateway', () => posts().length >= 2, PARKED_RETRY_BACKOFF_MS + 20_000, 20);
    const got = posts();
    expect(got.map((p) => p.id)).toEqual([event.id, event.id]);
    expect(got[1]!.atMs - got[0]!.atMs).toBeGreaterThanOrEqual(PARKED_RETRY_BACKOFF_MS - 20); // the backoff still held
    // Delivered (2xx): no third attempt, no dead letter.
    await new Promise((r) => setTimeout(r, PARKED_RETRY_BACKOFF_MS + 500));
    expect(posts()).toHaveLength(2);
    expect(await recordCount(second.gateway, `${group}.dlq`)).toBe(0n);
  } finally {
    await Promise.allSettled([...open].map((g) => g.close()));
    await sink.close();
  }
}
