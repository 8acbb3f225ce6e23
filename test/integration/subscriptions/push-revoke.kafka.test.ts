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
  // Longer than the test: the gated OPTIONS is answered only after the move, which takes as long as
  // the rebalance does; a handshake timed out would be retried, then dead-lettered.
  timeoutMs: 120_000,
  retryAfterCapMs: 2_000,
  rateLimit: null,
  concurrency: 16,
  ...over,
});

// The two clients' describes run at once (each on a catalog, topics, groups and sinks of its own,
// so they do not meet; most of their time is the rate-limited drain, 1 event/s): the file took the
// sum of the two, 78 s, for the longer of them. The cases of one client run one after the other
// (it.sequential): the second delivers the first one's events too (partitionOf).
describe.concurrent.each(['kafkajs', 'platformatic'] as const)('push delivery after a rebalance (%s)', (client) => {
  const cat = ownCatalog(`it-push-revoke-${client}`, client);
  afterAll(async () => {
    await cat.close();
  });
  // Every event published on this describe's topic, with its partition: each case's group reads the
  // topic from the earliest offset, so the second case delivers the first case's events too.
  const partitionOf = new Map<string, number>();

  it.sequential.each([
    // Rate 1/s on gateway a: its bucket of 1 token sends at most 1 + t events in t s, so of 8 events
    // per partition (48) most still wait for a token when the partitions move (a had sent 2 to 6
    // when they moved at load 11-18, 2026-12-07); asserted below, not assumed.
    ['waiting for a rate token', { rateLimit: 1 }, 8, false],
    // The OPTIONS is answered only once the partitions have moved (a gate the test opens, not a
    // delay: a 9 s delay ended before the rebalance under load, and gateway a then delivered
    // everything before the move, so the case checked nothing).
    ['waiting for a slow validation handshake', { handshake: true }, 4, true],
  ] as const)('events %s on the old owner are not sent once their partition moved', async (_what, over, rounds, gated) => {
    const group = uniqueName(`it-push-revoke-${client}`);
    let sink: TestSink | undefined;
    const sinks: WebhookSink[] = [];
    const subs: Subscription[] = [];
    let open = (): void => undefined;
    const gate = new Promise<void>((r) => (open = r));
    try {
      sink = await startSink(async (req) => {
        if (req.method !== 'OPTIONS') return { status: 200 };
        if (gated) await gate;
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
      const instruments = instrumentsPerPartition(partitions, `R${client}${rounds}${String(gated)}`);
      const gwPub = await cat.member({});
      // `rounds` events per partition: gateway a holds them all, waiting (rate 1/s, or the OPTIONS).
      const mine: string[] = [];
      for (let round = 0; round < rounds; round++) {
        for (const [p, instrument] of instruments.entries()) {
          const r = gwPub.publisher().publish('PriceLoadingCompleted', { ...priceLoaded(instrument, 'H1'), barsLoaded: round })!;
          const pos = await r.delivered;
          expect(pos.partition).toBe(p);
          partitionOf.set(r.id, pos.partition);
          mine.push(r.id);
        }
      }
      const posts = (): SinkRequest[] => sink!.deliveries();
      const idOf = (r: SinkRequest): string => String(r.headers['ce-id']);
      // Gateway a has events in hand: they wait for the handshake it asked for.
      if (gated) await waitFor('gateway a asks for the handshake', () => sink!.requests.some((r) => r.method === 'OPTIONS'), 30_000);
      // Gateway b joins: some partitions move to it while gateway a's events of them still wait.
      const b = await member('b');
      await waitFor('the partitions spread over both gateways', () => held(b).length > 0 && held(a).length + held(b).length === partitions, 30_000);
      // Gateway a's lanes of the moved partitions are revoked by now: a member's assignment changes
      // only after its revoke (both clients).
      const movedAt = performance.now();
      const moved = new Set(held(b));
      const sentBeforeMove = new Set(posts().map(idOf));
      open();
      // The case needs events of moved partitions still waiting on gateway a at the move.
      expect(mine.filter((id) => moved.has(partitionOf.get(id)!) && !sentBeforeMove.has(id)).length).toBeGreaterThan(0);
      // Every event on the topic (this case's and an earlier case's): all delivered, by a or by b.
      await waitFor('every event delivered', () => {
        const sent = new Set(posts().map(idOf));
        return [...partitionOf.keys()].every((id) => sent.has(id));
      }, 60_000);
      // A few more rate intervals: the old code went on sending what was waiting.
      await new Promise((r) => setTimeout(r, 3_000));
      // What gateway a sent of a moved partition after the move. Gated: nothing at all (a could send
      // nothing before the gate opened, after the move). Rate: a request already under way at the
      // revoke may complete at the sink just after it — 1 s of grace for that loopback request
      // (milliseconds); the old code's sends of what waited came at the rate, 1/s, for as long as
      // anything of those partitions waited (up to 17 s after the move in the trial).
      const graceMs = gated ? 0 : 1_000;
      const late = posts().filter((r) => r.headers['x-gateway'] === 'a' && moved.has(partitionOf.get(idOf(r))!) && (gated || r.atMs > movedAt + graceMs));
      expect(late.map((r) => `${idOf(r)}@p${partitionOf.get(idOf(r))}`)).toEqual([]);
      // Nothing was counted as a failure on a: no retries, no dead letters.
      expect(a.stats()).toMatchObject({ deadLettered: 0 });
      expect(b.stats()).toMatchObject({ deadLettered: 0 });
    } finally {
      open();
      await Promise.allSettled(subs.map((s) => s.unsubscribe()));
      await Promise.allSettled(sinks.map((s) => s.close()));
      await sink?.close();
    }
  }, 120_000);
});
