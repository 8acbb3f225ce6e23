/**
 * The scenario of "PATCH ordering none → key" (issue 8 retries through the retry topic), for any
 * transport: a push subscription with `ordering: none` whose sink fails every delivery parks three
 * retries on `<group>.retry`; a PATCH turns it to `ordering: key` while they wait, the sink starts
 * accepting, and all three must be delivered (the member under `key` used not to read the retry
 * topic, so they were stranded, and the status's lag left them out).
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount } from './gateway.js';
import type { TestGateway } from './gateway.js';
import { acceptAll, startSink } from './sink.js';
import { waitFor } from './wait.js';

interface StatusLag {
  readonly lag: { readonly total: number; readonly partitions: readonly { readonly topic: string; readonly lag: number | null }[] };
}

/**
 * Runs the scenario on `g` (loaded and listening; the caller closes it). `backoffMs`: the parked
 * retries' backoff, long enough for the PATCH and a status read to land while they wait.
 */
export async function expectReorderedRetriesDelivered(g: TestGateway, backoffMs: number, name = `reorder-${randomUUID().slice(0, 8)}`): Promise<void> {
  let accepting = false;
  const accepted = new Set<string>();
  const sink = await startSink((req, nth) => {
    if (req.method !== 'POST') return acceptAll(req, nth);
    if (!accepting) return { status: 500, body: 'not yet' };
    accepted.add(String(req.headers['ce-id']));
    return { status: 200 };
  });
  try {
    const group = `ce-gateway.sub.anonymous.${name}`;
    const created = await fetch(`${g.url}/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], ordering: 'none', retry: { maxAttempts: 5, backoff: { initialMs: backoffMs, factor: 1, maxMs: backoffMs, jitter: 0 } }, delivery: { mode: 'push', url: sink.url } }),
    });
    expect(created.status, await created.text()).toBe(201);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const events = ['A', 'B', 'C'].map((k, i) => structuredPriceEvent({ id: ids[i] }, priceLoaded(`REORDER/${k}`, 'H1')));
    const posted = await fetch(`${g.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
    expect(posted.status, await posted.text()).toBe(202);
    const tried = (): string[] => sink.deliveries().map((r) => String(r.headers['ce-id']));
    await waitFor('one failed attempt of each event', () => ids.every((id) => tried().includes(id)), 30_000, 20);
    await waitFor('the three retries parked on the retry topic', async () => (await recordCount(g.gateway, `${group}.retry`)) >= 3n, 30_000, 20);

    const patched = await fetch(`${g.url}/subscriptions/${name}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ ordering: 'key' }) });
    expect(patched.status, await patched.text()).toBe(200);
    const status = async (): Promise<StatusLag> => {
      const r = await fetch(`${g.url}/subscriptions/${name}/status`);
      expect(r.status).toBe(200);
      return (await r.json()) as StatusLag;
    };
    // Not due yet: the parked retries are lag on the retry topic (they were left out of it).
    const waiting = await status();
    expect(waiting.lag.partitions.filter((p) => p.topic === `${group}.retry`).reduce((a, p) => a + (p.lag ?? 0), 0)).toBeGreaterThanOrEqual(3);

    accepting = true;
    await waitFor('the three parked retries delivered under ordering key', () => ids.every((id) => accepted.has(id)), backoffMs + 30_000, 50);
    await waitFor('no lag left', async () => (await status()).lag.total === 0, 15_000, 100);
    expect(await recordCount(g.gateway, `${group}.dlq`)).toBe(0n);
  } finally {
    await sink.close();
  }
}
