/**
 * F1: a partition that moves to another gateway (rebalance) while its events wait on the old one
 * for a rate token (`rateLimit`) or for the validation handshake (a slow OPTIONS) is not delivered
 * by the old one any more: those attempts were never sent, so they are dropped when the partition
 * is revoked (DeliveryContext.revoked aborts the sink's waits), not counted, not dead-lettered, not
 * committed; the new owner delivers them. Before, the old gateway went on sending them for as long
 * as the waits lasted (up to 17 s after the move in the trial): duplicates never in flight, two
 * gateways delivering one key at once, a total rate above `rateLimit`.
 * Two members of one group in this process (gateways `a` and `b`, each with its own push sink on a
 * real HTTP server on 127.0.0.1), on both Kafka clients.
 * Spec: issue 8 (push delivery: at-least-once, per-key order, rate over all instances);
 *   CloudEvents Web Hooks 1.0.2 §4 (validation handshake, WebHook-Request-Rate).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { retryPolicy } from '../../../src/core/retry.js';
import type { SinkContext } from '../../../src/bus/subscriptions/index.js';
import { createWebhookSink, parseAllowList } from '../../../src/connectors/sinks/webhook/index.js';
import type { PushSettings, WebhookSink } from '../../../src/connectors/sinks/webhook/index.js';
import type { Subscription } from '../../../src/bus/subscriber/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { priceLoaded } from '../../fixtures/events.js';
import { uniqueName } from '../../helpers/stack.js';
import { startSink } from '../../helpers/sink.js';
import type { SinkRequest, TestSink } from '../../helpers/sink.js';
import { waitFor } from '../../helpers/wait.js';
import { instrumentsPerPartition, ownCatalog } from '../consumer/members.js';

const ORIGIN = 'gateway.test';
const allow = parseAllowList('127.0.0.1');
const sinkCtx = (): SinkContext => ({ markGone: () => undefined, share: () => 1 });

const settings = (url: string, gateway: string, over: Partial<PushSettings>): PushSettings => ({
  url,
  contentMode: 'binary',
  data: 'json',
  handshake: false,
  secrets: [],
  headers: { 'x-gateway': gateway },
  timeoutMs: 10_000,
  retryAfterCapMs: 2_000,
  rateLimit: null,
  concurrency: 16,
  ...over,
});

describe.each(['kafkajs', 'platformatic'] as const)('push delivery after a rebalance (%s)', (client) => {
  const cat = ownCatalog(`it-push-revoke-${client}`, client);
  afterAll(async () => {
    await cat.close();
  });

  it.each([
    ['waiting for a rate token', { rateLimit: 1 }, 0],
    ['waiting for a slow validation handshake', { handshake: true }, 9_000],
  ] as const)('events %s on the old owner are not sent once their partition moved', async (_what, over, optionsDelayMs) => {
    const group = uniqueName(`it-push-revoke-${client}`);
    let sink: TestSink | undefined;
    const sinks: WebhookSink[] = [];
    const subs: Subscription[] = [];
    try {
      sink = await startSink(async (req) => {
        if (req.method !== 'OPTIONS') return { status: 200 };
        await new Promise((r) => setTimeout(r, optionsDelayMs));
        return { status: 200, headers: { 'webhook-allowed-origin': ORIGIN } };
      });
      const url = sink.url;
      const member = async (name: string): Promise<Subscription> => {
        const gw = await cat.member({});
        const s = createWebhookSink(settings(url, name, over), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
        sinks.push(s);
        const sub = await gw.subscribe({
          subscription: group,
          kinds: ['PriceLoadingCompleted'],
          ordering: 'key',
          inFlightPerPartition: 16,
          startFrom: 'earliest',
          commitEveryRecords: 1,
          commitIntervalMs: 50,
          retry: retryPolicy({ maxAttempts: 3, initialDelayMs: 100, factor: 1, maxDelayMs: 100, jitter: 0 }),
          handler: s.handler,
        });
        subs.push(sub);
        return sub;
      };
      const a = await member('a');
      const held = (sub: Subscription): number[] => sub.assignments().filter((x) => x.topic === cat.priceTopic).map((x) => x.partition);
      await waitFor('gateway a holds the partitions', () => held(a).length > 0, 30_000);
      const partitions = held(a).length;
      const instruments = instrumentsPerPartition(partitions, `R${client}${optionsDelayMs}`);
      const gwPub = await cat.member({});
      // Four events per partition: gateway a holds them all, waiting (rate 1/s, or the OPTIONS).
      const partitionOf = new Map<string, number>();
      for (let round = 0; round < 4; round++) {
        for (const [p, instrument] of instruments.entries()) {
          const r = gwPub.publisher().publish('PriceLoadingCompleted', { ...priceLoaded(instrument, 'H1'), barsLoaded: round })!;
          const pos = await r.delivered;
          expect(pos.partition).toBe(p);
          partitionOf.set(r.id, pos.partition);
        }
      }
      const total = partitionOf.size;
      // Gateway b joins: some partitions move to it while gateway a's events of them still wait.
      const b = await member('b');
      await waitFor('the partitions spread over both gateways', () => held(b).length > 0 && held(a).length + held(b).length === partitions, 30_000);
      const movedAt = performance.now();
      const moved = new Set(held(b));
      const posts = (): SinkRequest[] => sink!.deliveries();
      const idOf = (r: SinkRequest): string => String(r.headers['ce-id']);
      await waitFor('every event delivered', () => new Set(posts().map(idOf)).size === total, 60_000);
      // A few more rate intervals: the old code went on sending what was waiting.
      await new Promise((r) => setTimeout(r, 3_000));
      // What gateway a sent of a moved partition after the move (a request under way at the
      // revoke may complete just after it: 300 ms of grace).
      const late = posts().filter((r) => r.headers['x-gateway'] === 'a' && moved.has(partitionOf.get(idOf(r))!) && r.atMs > movedAt + 300);
      expect(late.map((r) => `${idOf(r)}@p${partitionOf.get(idOf(r))}`)).toEqual([]);
      // Nothing was counted as a failure on a: no retries, no dead letters.
      expect(a.stats()).toMatchObject({ deadLettered: 0 });
      expect(b.stats()).toMatchObject({ deadLettered: 0 });
    } finally {
      await Promise.allSettled(subs.map((s) => s.unsubscribe()));
      await Promise.allSettled(sinks.map((s) => s.close()));
      await sink?.close();
    }
  }, 120_000);
});
