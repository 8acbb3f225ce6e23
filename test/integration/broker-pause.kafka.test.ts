/**
 * Fault test (issue 12): a broker of this test's own — never the shared stack's, which others use —
 * is paused (SIGSTOP) for 8 s while several partners keep posting batches. Asserted:
 * - every answer came within the acknowledgement deadline plus 1 s of sending the request (the
 *   deadline runs from the request's arrival), paused broker or not;
 * - while paused: 503 with Retry-After, problem+json, /readyz 503;
 * - after SIGCONT: every event a 202 acknowledged, or a 503 listed as `stored`, is on the topic;
 *   every event listed as `notStored` is absent (it was provably not written); `unconfirmed`
 *   events may be either (counted and printed); the partner's retry of a notStored event is 202.
 * A gateway of each client, both through the one pause.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { KAFKA_CLIENTS, kafkaClientEnv } from '../helpers/kafka-client.js';
import type { KafkaClient } from '../helpers/kafka-client.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { idsOnTopic } from '../helpers/topic-ids.js';

const DEADLINE_MS = 3000;
const PAUSE_MS = 8000;
const PARTNERS = 6;
let broker: PrivateBroker;

beforeAll(async () => {
  broker = await startPrivateBroker('pause');
}, 120_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

interface Exchange {
  readonly ids: readonly string[];
  readonly tookMs: number;
  readonly status: number;
  readonly retryAfter: string | null;
  readonly type: string | null;
  readonly body: { code?: string; events?: { id: string }[]; stored?: { id: string }[]; notStored?: { id: string }[]; unconfirmed?: { id: string }[] };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function postBatch(gw: TestGateway, partner: number, seq: number): Promise<Exchange> {
  const events = Array.from({ length: 5 }, (_, i) => structuredPriceEvent({ id: `p${partner}-${seq}-${i}-${Math.random().toString(36).slice(2, 8)}` }, priceLoaded(`P${partner}/USD`, 'M1', String(22031500 + seq))));
  const t0 = performance.now();
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
  const body = (await res.json()) as Exchange['body'];
  return { ids: events.map((e) => String(e.id)), tookMs: performance.now() - t0, status: res.status, retryAfter: res.headers.get('retry-after'), type: res.headers.get('content-type'), body };
}

/** A gateway of one client on the private broker, and what its partners were answered. */
interface Run {
  readonly client: KafkaClient;
  readonly catalog: ReturnType<typeof catalogWithOwnTopics>;
  readonly exchanges: Exchange[];
  gw?: TestGateway;
  topic?: string;
  /** /readyz's status while the broker was paused. */
  readyWhilePaused?: number;
}

const runs: Run[] = KAFKA_CLIENTS.map((client) => ({ client, catalog: catalogWithOwnTopics(uniqueName(`pause-${client}`)), exchanges: [] }));

async function startRun(r: Run): Promise<void> {
  // Definitions of its own: the two gateways run at once on one broker.
  r.gw = await startGateway({ stack: true, env: { KAFKA_BROKERS: broker.brokers.join(','), INGRESS_ACK_TIMEOUT_MS: String(DEADLINE_MS), READINESS_TIMEOUT_MS: '1000', CATALOG_DIR: r.catalog.dir, SUBSCRIPTIONS_TOPIC: uniqueName(`pause-defs-${r.client}`), ...kafkaClientEnv(r.client) } });
  r.topic = r.gw.gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)!.topic.name;
  // Ready once topics, schemas and the subscription definitions are loaded.
  await waitFor(`/readyz 200 before the pause (${r.client})`, async () => (await fetch(`${r.gw!.url}/readyz`)).status === 200, 30_000, 100);
}

// Both clients (issue 14: the fault tests pass on each), a gateway of each at once, through ONE
// pause of the broker (a pause per client, one after the other, doubled the file's time); each
// client's test asserts on its own gateway's answers and topic.
describe(`broker paused during POST /events (a private broker, clients ${KAFKA_CLIENTS.join(' and ')} through one pause)`, () => {
  beforeAll(async () => {
    await Promise.all(runs.map(startRun));
    let stop = false;
    const loops = runs.flatMap((r) =>
      Array.from({ length: PARTNERS }, async (_, partner) => {
        for (let seq = 0; !stop; seq++) {
          r.exchanges.push(await postBatch(r.gw!, partner, seq));
          await sleep(20);
        }
      }),
    );
    for (const r of runs) await waitFor(`50 acknowledged batches before the pause (${r.client})`, () => r.exchanges.filter((e) => e.status === 202).length >= 50, 30_000, 20);

    await broker.pause(); // stopped (state T) before anything is sent to it
    try {
      await sleep(DEADLINE_MS + 500);
      await Promise.all(runs.map(async (r) => (r.readyWhilePaused = (await fetch(`${r.gw!.url}/readyz`)).status)));
      await sleep(PAUSE_MS - DEADLINE_MS - 500);
    } finally {
      broker.signal('SIGCONT');
    }
    await sleep(3000);
    stop = true;
    await Promise.all(loops);
  }, 180_000);
  afterAll(async () => {
    broker?.signal('SIGCONT');
    await Promise.allSettled(runs.map((r) => r.gw?.close() ?? Promise.resolve()));
    for (const r of runs) r.catalog.cleanup();
  }, 60_000);

  describe.each(KAFKA_CLIENTS)('client %s', (client) => {
    it('every answer within the deadline + 1 s; notStored events are absent after the broker resumes, stored ones present; 503 + Retry-After and /readyz 503 while paused', async () => {
      const { exchanges, gw, topic, readyWhilePaused } = runs.find((r) => r.client === client)!;

      // Answers: on time, and what a paused broker must give.
      const late = exchanges.filter((e) => e.tookMs > DEADLINE_MS + 1000);
      expect(late.map((e) => Math.round(e.tookMs))).toEqual([]);
      const refused = exchanges.filter((e) => e.status !== 202);
      expect(refused.length).toBeGreaterThan(0);
      for (const e of refused) {
        expect({ status: e.status, code: e.body.code, retryAfter: e.retryAfter, type: e.type }).toEqual({ status: 503, code: expect.stringMatching(/^CEG_(DELIVERY_TIMEOUT|BROKER_UNAVAILABLE|QUEUE_FULL)$/) as string, retryAfter: expect.stringMatching(/^\d+$/) as string, type: 'application/problem+json' });
        // Each event of the batch is accounted for exactly once.
        const listed = [...(e.body.stored ?? []), ...(e.body.notStored ?? []), ...(e.body.unconfirmed ?? [])].map((x) => x.id).sort();
        expect(listed).toEqual([...e.ids].sort());
      }
      expect(readyWhilePaused).toBe(503);
      await waitFor('/readyz 200 after SIGCONT', async () => (await fetch(`${gw!.url}/readyz`)).status === 200, 30_000, 250);

      const stored = new Set([...exchanges.filter((e) => e.status === 202).flatMap((e) => e.body.events!.map((x) => x.id)), ...refused.flatMap((e) => (e.body.stored ?? []).map((x) => x.id))]);
      const notStored = refused.flatMap((e) => (e.body.notStored ?? []).map((x) => x.id));
      const unconfirmed = refused.flatMap((e) => (e.body.unconfirmed ?? []).map((x) => x.id));
      expect(notStored.length + unconfirmed.length).toBeGreaterThan(0);

      // Let anything still in flight land before reading.
      await sleep(1000);
      const onTopic = await idsOnTopic(gw!.gateway.transport, topic!, 'pause-read');
      expect([...stored].filter((id) => !onTopic.has(id))).toEqual([]);
      expect(notStored.filter((id) => onTopic.has(id))).toEqual([]);
      const unconfirmedLanded = unconfirmed.filter((id) => onTopic.has(id)).length;
      console.info(`broker-pause (${client}): ${exchanges.length} requests, ${refused.length} answered 503; events stored ${stored.size}, notStored ${notStored.length} (0 on the topic), unconfirmed ${unconfirmed.length} (${unconfirmedLanded} landed anyway); slowest answer ${Math.round(Math.max(...exchanges.map((e) => e.tookMs)))} ms`);

      // The partner's retry of a notStored event (same id) is accepted.
      if (notStored.length > 0) {
        const id = notStored[0]!;
        const retry = await fetch(`${gw!.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent({ id }, priceLoaded('RTY/USD', 'M1'))) });
        expect(retry.status).toBe(202);
      }
    }, 120_000);
  });
});
