/**
 * Issue 10 "Done when" (hundreds of subscriptions per gateway), on the real stack: one gateway on a
 * catalog and a definitions topic of this run's own, `SCALE_SUBSCRIPTIONS` push subscriptions
 * (default 500) created over HTTP — 100 on PriceLoadingCompleted, the rest on two other kinds —
 * served by one loopback HTTP sink (a path per subscription).
 * - Idle, the gateway runs no consumer-group member at all (`ce_gateway_subscription_members`).
 * - A post of one PriceLoadingCompleted event reaches all 100 of its sinks, exactly once, and no
 *   other sink; at most those 100 subscriptions ever get a member.
 * Everything this run created on the shared broker (groups, dead-letter topics, its topics) is
 * deleted afterwards. Timings are printed (creation, first delivery, all 100).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanUpBroker, createSubscription, inParallel, memberCounts, startFleetSink } from '../../../bench/lib/subscription-fleet.js';
import type { FleetSink } from '../../../bench/lib/subscription-fleet.js';
import { priceLoaded } from '../../fixtures/events.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { stackEnv, uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ownCatalog } from '../consumer/members.js';
import type { OwnCatalog } from '../consumer/members.js';

const TOTAL = Number(process.env.SCALE_SUBSCRIPTIONS ?? 500);
const ON_PRICE = Math.min(100, TOTAL);
const OTHER_KINDS = ['SeriesUpdateCompleted', 'IndicatorsComputed'] as const;

let cat: OwnCatalog;
let gw: TestGateway;
let sink: FleetSink;
const run = uniqueName('it-scale').replace(/\./g, '-');
const names = Array.from({ length: TOTAL }, (_, i) => `${run}-${i}`);
const kindOf = (i: number): string => (i < ON_PRICE ? 'PriceLoadingCompleted' : OTHER_KINDS[i % OTHER_KINDS.length]!);
const groups: string[] = [];
const definitionsTopic = `${run}.subscriptions`;

beforeAll(async () => {
  cat = ownCatalog(run);
  sink = await startFleetSink();
  gw = await startGateway({
    stack: true,
    env: { ...cat.env(), SUBSCRIPTIONS_TOPIC: definitionsTopic, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'), WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' },
  });
  await gw.gateway.subscriptionsLoaded();
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await sink?.close();
  const topics = [...groups.map((g) => `${g}.dlq`), definitionsTopic, ...(cat === undefined ? [] : gw.gateway.catalog.topics.map((t) => t.name))];
  await cleanUpBroker(stackEnv().kafkaBrokers, groups, topics);
  await cat?.close();
}, 180_000);

describe(`${TOTAL} subscriptions on one gateway`, () => {
  it(`idle: no member; one event of a kind ${ON_PRICE} of them subscribe to reaches all ${ON_PRICE} sinks once, and no other`, async () => {
    const t0 = performance.now();
    await inParallel(names, 16, async (name, i) => {
      groups.push(await createSubscription(gw.url, { name, kinds: [kindOf(i)], delivery: { mode: 'push', url: `${sink.base}/${name}` } }));
    });
    const createdMs = performance.now() - t0;
    await waitFor(`${TOTAL} idle subscriptions`, async () => (await memberCounts(gw.url)).idle === TOTAL, 60_000, 250);
    expect((await memberCounts(gw.url)).running).toBe(0);

    const event = {
      specversion: '1.0',
      id: randomUUID(),
      source: 'urn:partner:it-scale',
      type: gw.gateway.catalog.byName('PriceLoadingCompleted')!.eventId,
      time: '2026-12-01T10:00:00.000Z',
      data: priceLoaded('EUR/USD', 'H1', '26120110'),
    };
    const t1 = performance.now();
    const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
    expect(res.status, await res.text()).toBe(202);
    let firstMs = Number.NaN;
    let peak = 0;
    const reached = (): number => names.slice(0, ON_PRICE).filter((n) => (sink.byPath.get(`/${n}`)?.length ?? 0) > 0).length;
    await waitFor(`the event at all ${ON_PRICE} sinks`, async () => {
      peak = Math.max(peak, (await memberCounts(gw.url)).running);
      if (Number.isNaN(firstMs) && sink.posts() > 0) firstMs = performance.now() - t1;
      return reached() === ON_PRICE;
    }, 120_000, 100);
    const allMs = performance.now() - t1;
    await new Promise((r) => setTimeout(r, 1000)); // a duplicate would show now
    for (const n of names.slice(0, ON_PRICE)) expect(sink.byPath.get(`/${n}`), n).toEqual([event.id]);
    expect(sink.posts()).toBe(ON_PRICE); // no other subscription got anything
    expect(peak).toBeLessThanOrEqual(ON_PRICE);
    console.info(`[scale] ${TOTAL} subscriptions created in ${Math.round(createdMs)} ms; first delivery after ${Math.round(firstMs)} ms, all ${ON_PRICE} after ${Math.round(allMs)} ms; at most ${peak} members at once`);
  }, 600_000);
});
