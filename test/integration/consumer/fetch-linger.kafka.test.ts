/**
 * Issue 8, the fetch linger on the real broker (@platformatic/kafka; kafkajs ignores the setting).
 * Two subscriptions on one topic, with lanes as push subscriptions run them, one with a fetch
 * linger of 300 ms and one without, read the same stream of 30 events published one every 30 ms.
 * Counted from the client's own `plt:kafka:consumer:fetches` diagnostics channel, per fetcher:
 * - before the stream (nothing fetched yet), both long-poll for any byte: a quiet subscription's
 *   first record is not held back;
 * - during the stream the lingering one asks the broker for more bytes (Fetch `min_bytes` > 1) and
 *   needs fewer fetches than the other, which fetches about once per record;
 * - both handle every event exactly once: the linger loses nothing.
 * And the operator's setting: a gateway started with PUSH_FETCH_LINGER_MS lingers in its push
 * subscriptions' fetches, and the sink gets every event.
 */
import { randomBytes } from 'node:crypto';
import { tracingChannel } from 'node:diagnostics_channel';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../bench/lib/gateway-process.js';
import { createGateway } from '../../../src/app/index.js';
import type { Gateway } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { priceLoaded } from '../../fixtures/events.js';
import { startSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ownCatalog } from './members.js';

interface FetchStart {
  readonly client: { readonly groupId?: string };
  readonly options: { readonly minBytes?: number };
}

/** Publishes `n` events one after the other, 30 ms apart (a trickle), on 4 keys; returns their ids. */
async function trickle(gw: Gateway, n: number, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = gw.publisher().publish('PriceLoadingCompleted', { ...priceLoaded(`${tag}${i % 4}/USD`, 'H1'), barsLoaded: i })!;
    ids.push(r.id);
    await r.delivered;
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  return ids;
}

describe('fetch linger (platformatic adapter)', () => {
  const cat = ownCatalog('it-linger', 'platformatic');
  afterAll(() => cat.close());

  it('a trickle is fetched several records at a time with a linger, one at a time without; nothing is lost', async () => {
    const gw = await cat.member({});
    const lingering = uniqueName('it-linger-on');
    const plain = uniqueName('it-linger-off');
    const fetches = new Map<string, { minBytes: number[] }>([
      [lingering, { minBytes: [] }],
      [plain, { minBytes: [] }],
    ]);
    // The consumption's fetcher is a group-less Consumer named after the group (src/transport/platformatic/consumption.ts).
    const onStart = (message: unknown): void => {
      const m = message as FetchStart;
      const group = m.client.groupId?.replace(/\.fetcher-never-joins$/, '');
      if (group !== undefined) fetches.get(group)?.minBytes.push(m.options.minBytes ?? 1);
    };
    const channel = tracingChannel('plt:kafka:consumer:fetches');
    channel.start.subscribe(onStart);
    const handled = new Map<string, string[]>([
      [lingering, []],
      [plain, []],
    ]);
    const subscribe = (name: string, fetchLingerMs?: number) =>
      gw.subscribe({
        subscription: name,
        kinds: ['PriceLoadingCompleted'],
        ordering: 'none',
        inFlightPerPartition: 4,
        ...(fetchLingerMs === undefined ? {} : { fetchLingerMs }),
        handler: (event) => {
          handled.get(name)!.push(event.attributes.id);
          return Promise.resolve();
        },
      });
    const subs = [await subscribe(lingering, 300), await subscribe(plain)];
    try {
      // Joined and polling: let each fetcher settle into its long poll on the empty topic.
      await new Promise((r) => setTimeout(r, 1500));
      for (const f of fetches.values()) expect(f.minBytes.every((b) => b === 1)).toBe(true);
      const before = new Map([...fetches].map(([g, f]) => [g, f.minBytes.length]));
      const ids = await trickle(gw, 30, 'LINGER');
      await waitFor('both subscriptions handled the 30 events', () => [...handled.values()].every((h) => h.length >= 30), 20_000);
      // A little longer: a duplicate would show up here.
      await new Promise((r) => setTimeout(r, 500));
      for (const h of handled.values()) expect([...h].sort()).toEqual([...ids].sort());
      const during = (g: string): number[] => fetches.get(g)!.minBytes.slice(before.get(g));
      expect(during(lingering).some((b) => b > 1)).toBe(true);
      expect(during(plain).every((b) => b === 1)).toBe(true);
      // About one fetch per record without the linger; fewer with it. Not "half as many": on a
      // loaded machine the trickle's gaps stretch past the linger and a run had 18 against 32
      // (official CI machines are as loaded); the linger's own mark is min_bytes > 1 above.
      expect(during(plain).length).toBeGreaterThanOrEqual(15);
      expect(during(lingering).length).toBeLessThan(during(plain).length);
    } finally {
      channel.start.unsubscribe(onStart);
      await Promise.all(subs.map((s) => s.unsubscribe()));
    }
  }, 60_000);

  it('PUSH_FETCH_LINGER_MS reaches the push subscriptions of a gateway', async () => {
    const config = loadConfig({
      ...cat.env(),
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      PUSH_FETCH_LINGER_MS: '100',
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      SUBSCRIPTIONS_TOPIC: `${cat.priceTopic}.subscriptions`,
      SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'),
      SUBSCRIPTION_IDLE_STOP_MS: '0',
    });
    expect(config.subscriptions.fetchLingerMs).toBe(100);
    const gw = createGateway(config, createLogger({ level: config.logLevel, destination: process.stderr }));
    const sink = await startSink();
    const name = uniqueName('it-linger-push');
    const minBytes: number[] = [];
    const onStart = (message: unknown): void => {
      const m = message as FetchStart;
      if (m.client.groupId?.endsWith(`.${name}.fetcher-never-joins`) === true) minBytes.push(m.options.minBytes ?? 1);
    };
    const channel = tracingChannel('plt:kafka:consumer:fetches');
    channel.start.subscribe(onStart);
    try {
      await gw.ready;
      await gw.listen();
      await gw.subscriptionsLoaded();
      await gw.subscriptionService()!.create({ name, kinds: ['PriceLoadingCompleted'], ordering: 'none', concurrency: 4, delivery: { mode: 'push', url: sink.url } });
      await waitFor('the push member fetching', () => minBytes.length > 0, 20_000);
      const ids = await trickle(gw, 20, 'LPUSH');
      await waitFor('the sink received the 20 events', () => new Set(sink.deliveries().map((d) => String(d.headers['ce-id']))).size >= 20, 20_000);
      expect(new Set(sink.deliveries().map((d) => String(d.headers['ce-id'])))).toEqual(new Set(ids));
      expect(minBytes.some((b) => b > 1)).toBe(true);
    } finally {
      channel.start.unsubscribe(onStart);
      await gw.close();
      await sink.close();
    }
  }, 60_000);
});
