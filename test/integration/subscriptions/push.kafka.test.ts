/**
 * Issue 8 "Done when", on the real stack: two gateway processes (`ce-gateway serve` children) on a
 * catalog and a definitions topic of this run's own, real HTTP sinks on 127.0.0.1.
 * - A subscription created on one gateway delivers from both within 5 s; 1,000 events of three
 *   kinds and 20 keys arrive exactly once, signatures verify with the returned secret, the subject
 *   `Euro € 😀 "q" 100%` intact, in order per key.
 * - A PATCH of the filter on one gateway applies on both.
 * - A 500 sink with maxAttempts 3: exactly 3 attempts per event, then the dead letter with status
 *   500 and the excerpt. A 503 + Retry-After: 2 sink, twice: delivered on the third attempt, each
 *   wait ≥ 2 s. A 410 sink: the subscription is gone, no further attempts.
 * - A retrying event on one partition does not delay the other partitions.
 * - SIGKILL of one gateway mid-stream: every event delivered at least once; duplicates no more
 *   than the deliveries that gateway made in the last second before it died (commits every 250 ms).
 * `ordering: key` runs per-key lanes (several keys of a partition at once), so "in order per key"
 * checks them. Both Kafka clients have lanes: `KAFKA_CLIENT=platformatic npx vitest run <this file>`
 * runs the gateways on @platformatic/kafka (a second client doubles the file's minutes, so it is
 * chosen per run rather than run twice).
 * The 500 and the other-partitions cases run at once (it.concurrent), and so do the 503 and 410
 * halves of their case: each on a subscription, a consumer group, sinks and a kind (so a topic) of
 * its own, none stops a gateway; most of their time is waiting for groups to settle and for retry
 * backoffs. On one kind, each sink got the other's events too (a 410 sink answered them 410). The
 * 1,000-event case (its 5 s), the PATCH case (its wait for both instances to read the change) and
 * the SIGKILL case run with no other case beside them.
 */
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../../../bench/lib/gateway-process.js';
import { DEAD_LETTER_HEADERS } from '../../../src/bus/subscriber/index.js';
import { decodeHeaderValue } from '../../../src/codec/http/index.js';
import { indicatorsComputed, priceLoaded, seriesUpdated } from '../../fixtures/events.js';
import { acceptAll, startSink } from '../../helpers/sink.js';
import type { SinkRequest, TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { instrumentsPerPartition } from '../consumer/members.js';
import { api, postBatch, startGatewayPair } from './gateway-pair.js';
import type { GatewayPair } from './gateway-pair.js';
import { readDeadLetters } from './dead-letters.js';

const SUBJECT = 'Euro € 😀 "q" 100%';
interface Kind {
  readonly name: string;
  /** eventId, read from the gateway's /catalog. */
  type: string;
  readonly data: (instrument: string, timeframe: string, bar: string) => Record<string, unknown>;
}
const KINDS: [Kind, Kind, Kind] = [
  { name: 'PriceLoadingCompleted', type: '', data: (i, t, b) => ({ ...priceLoaded(i, t, b) }) },
  { name: 'SeriesUpdateCompleted', type: '', data: (i, t, b) => ({ ...seriesUpdated(i, t, b) }) },
  { name: 'IndicatorsComputed', type: '', data: (i, t, b) => ({ ...indicatorsComputed(i, t, b) }) },
];

let pair: GatewayPair;
let a: GatewayProcess;
let b: GatewayProcess;
const sinks: TestSink[] = [];

/** A subscription's sample of a metric on one gateway (its /metrics); 0 when absent. */
async function metricOn(gw: GatewayProcess, metric: string, group: string, outcome?: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${metric}{`) && l.includes(`subscription="${group}"`) && (outcome === undefined || l.includes(`outcome="${outcome}"`)));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const handledOn = (gw: GatewayProcess, group: string): Promise<number> => metricOn(gw, 'ce_gateway_subscription_records_total', group, 'handled');

/** Both gateways hold a share of the subscription's partitions (6 of the topic + 1 of its redrive topic), twice in a row 1 s apart: the group is settled. */
async function settled(group: string, partitions = 7): Promise<void> {
  let stable = 0;
  await waitFor(`${group} spread over both gateways`, async () => {
    const [pa, pb] = [await metricOn(a, 'ce_gateway_subscription_partitions', group), await metricOn(b, 'ce_gateway_subscription_partitions', group)];
    stable = pa > 0 && pb > 0 && pa + pb === partitions ? stable + 1 : 0;
    return stable >= 2;
  }, 30_000, 1000);
}

function event(kind: Kind, key: number | string, seq: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    specversion: '1.0',
    id: randomUUID(),
    source: 'urn:partner:it-push',
    type: kind.type,
    time: '2026-12-01T10:00:00.000Z',
    subject: SUBJECT,
    data: kind.data(typeof key === 'string' ? key : `K${key}/USD`, 'H1', String(seq).padStart(8, '0')),
    ...over,
  };
}

async function sink(responder = acceptAll): Promise<TestSink> {
  const s = await startSink(responder);
  sinks.push(s);
  return s;
}

const fast = { maxAttempts: 3, backoff: { initialMs: 100, factor: 1, maxMs: 5000, jitter: 0 } };

async function create(gw: GatewayProcess, to: TestSink, body: Record<string, unknown>): Promise<{ name: string; group: string; secret: string }> {
  const name = uniqueName('push').replace(/\./g, '-');
  const r = await api(gw, 'POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], retry: fast, delivery: { mode: 'push', url: to.url }, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { name, group: r.body.group as string, secret: ((r.body.delivery as { secrets?: string[] }).secrets ?? [''])[0]! };
}

/** Both gateways run the subscription and its partitions are spread over them. */
async function runningOnBoth(group: string, probe: () => Promise<void>): Promise<void> {
  await waitFor(`${group} delivering from both gateways`, async () => {
    await probe();
    return (await handledOn(a, group)) > 0 && (await handledOn(b, group)) > 0;
  }, 30_000, 300);
}

beforeAll(async () => {
  // The SIGKILL case waits for the killed gateway's session to run out before its partitions
  // move: 6 s (the broker's group.min.session.timeout.ms) instead of the default 30 s.
  pair = await startGatewayPair('it-push', { KAFKA_SESSION_TIMEOUT_MS: '6000' });
  ({ a, b } = pair);
  for (const k of KINDS) k.type = pair.eventIds.get(k.name)!;
}, 200_000);

afterAll(async () => {
  await pair?.stop();
  await Promise.allSettled(sinks.map((s) => s.close()));
});

const idOf = (r: SinkRequest): string => String(r.headers['ce-id']);

describe('push subscriptions on two gateways', () => {
  it('created on one, delivers from both within 5 s; 1,000 events of 3 kinds and 20 keys exactly once, signed, subject intact, in order per key', async () => {
    const s = await sink();
    const { name, group, secret } = await create(a, s, { kinds: KINDS.map((k) => k.name), ordering: 'key', concurrency: 6 });
    const created = Date.now(); // the 201
    // Probe events until both gateways have delivered: within 5 s of the creation.
    let probeSeq = 0;
    await runningOnBoth(group, () => postBatch(a, Array.from({ length: 20 }, (_, k) => event(KINDS[0], k, ++probeSeq, { subject: 'probe' }))));
    expect(Date.now() - created).toBeLessThan(5000 + 1000); // the 5 s, plus this poll's own period
    expect((await api(b, 'GET', `/subscriptions/${name}`)).status).toBe(200);
    const probes = s.deliveries().length;

    const sent: Record<string, unknown>[] = [];
    for (let seq = 1; sent.length < 1000; seq++) for (const kind of KINDS) for (let k = 0; k < 20 && sent.length < 1000; k++) sent.push(event(kind, k, seq));
    for (let i = 0; i < sent.length; i += 100) await postBatch(i % 200 === 0 ? a : b, sent.slice(i, i + 100));
    await waitFor('1,000 deliveries', () => s.deliveries().length >= probes + 1000, 60_000, 200);
    await new Promise((r) => setTimeout(r, 1000)); // a duplicate would show now
    const got = s.deliveries().slice(probes).filter((r) => r.headers['ce-subject'] !== 'probe');
    expect(got).toHaveLength(1000);
    expect(new Set(got.map(idOf))).toEqual(new Set(sent.map((e) => e.id as string)));
    const wh = new Webhook(secret);
    const lastSeq = new Map<string, number>();
    for (const r of got) {
      expect(decodeHeaderValue(String(r.headers['ce-subject']))).toEqual({ ok: true, value: SUBJECT });
      const data = wh.verify(r.body, r.headers as Record<string, string>) as { barKey: string };
      const key = `${String(r.headers['ce-type'])}|${String(r.headers['ce-partitionkey'])}`;
      const seq = Number(data.barKey.slice(-8));
      expect(seq, key).toBeGreaterThan(lastSeq.get(key) ?? 0);
      lastSeq.set(key, seq);
    }
    expect(lastSeq.size).toBe(60);
    expect(await api(b, 'DELETE', `/subscriptions/${name}`)).toMatchObject({ status: 204 });
  });

  it('a PATCH of the filter on one gateway applies on both', async () => {
    const s = await sink();
    const { name, group } = await create(a, s, { concurrency: 6 });
    await runningOnBoth(group, () => postBatch(a, Array.from({ length: 20 }, (_, k) => event(KINDS[0], k, 1, { subject: 'before' }))));
    expect((await api(b, 'PATCH', `/subscriptions/${name}`, { filters: [{ exact: { subject: 'wanted' } }] })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2500)); // both instances read the change (a fetch wait)
    const before = s.deliveries().length;
    const [ha, hb] = [await handledOn(a, group), await handledOn(b, group)];
    const after = Array.from({ length: 40 }, (_, i) => event(KINDS[0], i % 20, 2, { subject: i % 2 === 0 ? 'wanted' : 'unwanted' }));
    await postBatch(a, after);
    await waitFor('the 20 wanted events', () => s.deliveries().length >= before + 20, 20_000, 200);
    await new Promise((r) => setTimeout(r, 1000));
    const got = s.deliveries().slice(before);
    expect(got.map((r) => r.headers['ce-subject'])).toEqual(Array.from({ length: 20 }, () => 'wanted'));
    expect(new Set(got.map(idOf))).toEqual(new Set(after.filter((e) => e.subject === 'wanted').map((e) => e.id as string)));
    expect(await handledOn(a, group)).toBeGreaterThan(ha); // both delivered after the patch
    expect(await handledOn(b, group)).toBeGreaterThan(hb);
    await api(a, 'DELETE', `/subscriptions/${name}`);
  });

  // The next two run at once (it.concurrent): see the file's comment.
  it.concurrent('a sink answering 500 with maxAttempts 3: exactly 3 attempts per event, then the dead letter with status 500 and the excerpt', async () => {
    const s = await sink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : { status: 500, body: 'database on fire' }));
    // A kind of its own: the case beside it publishes PriceLoadingCompleted.
    const { name, group } = await create(a, s, { kinds: [KINDS[1].name] });
    await settled(group);
    const events = Array.from({ length: 5 }, (_, k) => event(KINDS[1], k, 1));
    await postBatch(b, events);
    const dead = await readDeadLetters(group, events.map((e) => e.id));
    for (const e of events) {
      expect(s.deliveries().filter((r) => idOf(r) === e.id)).toHaveLength(3);
      const h = dead.get(e.id as string)!;
      expect(h.get(DEAD_LETTER_HEADERS.lastStatus)).toBe('500');
      expect(h.get(DEAD_LETTER_HEADERS.responseExcerpt)).toBe('database on fire');
      expect(h.get(DEAD_LETTER_HEADERS.attempts)).toBe('3');
      expect(h.get(DEAD_LETTER_HEADERS.sink)).toBe(s.url);
    }
    await api(a, 'DELETE', `/subscriptions/${name}`);
  });

  it.concurrent('a retrying event on one partition does not delay the other partitions', async () => {
    // One instrument per partition: the first one's partition holds the failing event, the others flow.
    const [stuckInstrument, ...others6] = instrumentsPerPartition(6, 'RP');
    const stuckKey = `${stuckInstrument!.replace('/', '-')}_H1`;
    const s = await sink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : req.headers['ce-partitionkey'] === stuckKey ? { status: 500 } : { status: 200 }));
    const { name, group } = await create(a, s, { retry: { maxAttempts: 4, backoff: { initialMs: 3000, factor: 1, maxMs: 3000, jitter: 0 } } });
    await settled(group);
    const stuck = event(KINDS[0], stuckInstrument!, 1);
    await postBatch(a, [stuck]);
    await waitFor('the first failed attempt', () => s.deliveries().some((r) => idOf(r) === stuck.id), 10_000, 50);
    const t0 = performance.now();
    const others = Array.from({ length: 60 }, (_, i) => event(KINDS[0], others6[i % others6.length]!, 2 + i));
    await postBatch(a, others);
    await waitFor('the other partitions’ events', () => others.every((e) => s.deliveries().some((r) => idOf(r) === e.id)), 20_000, 50);
    const stuckAttempts = s.deliveries().filter((r) => idOf(r) === stuck.id).length;
    // Everything else was delivered while the stuck event still waits for its next attempts (3 s apart).
    expect(stuckAttempts).toBeLessThan(4);
    expect(performance.now() - t0).toBeLessThan(9000);
    await api(a, 'DELETE', `/subscriptions/${name}`);
  });

  it('503 + Retry-After: 2 twice, then 200: delivered on the third attempt, each wait ≥ 2 s; a 410 makes it gone', async () => {
    // The two halves use subscriptions, sinks and kinds of their own: they run at once.
    const retryAfter = async (): Promise<void> => {
      const s = await sink((req) => {
        if (req.method === 'OPTIONS') return acceptAll(req, 0);
        const tries = s.deliveries().filter((r) => idOf(r) === idOf(req)).length;
        return tries <= 2 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 };
      });
      const { name, group } = await create(a, s, { retry: { maxAttempts: 5, backoff: { initialMs: 50, factor: 1, maxMs: 10_000, jitter: 0 } } });
      await settled(group);
      const e = event(KINDS[0], 3, 1);
      await postBatch(a, [e]);
      await waitFor('the third attempt', () => s.deliveries().filter((r) => idOf(r) === e.id).length === 3, 20_000, 100);
      const [t1, t2, t3] = s.deliveries().filter((r) => idOf(r) === e.id).map((r) => r.atMs);
      expect(t2! - t1!).toBeGreaterThanOrEqual(2000);
      expect(t3! - t2!).toBeGreaterThanOrEqual(2000);
      await new Promise((r) => setTimeout(r, 1000));
      expect(s.deliveries().filter((r) => idOf(r) === e.id)).toHaveLength(3);
      await api(a, 'DELETE', `/subscriptions/${name}`);
    };

    const gone410 = async (): Promise<void> => {
      // A kind of its own: the 503 half's event must not reach this sink (another 410).
      const gone = await sink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : { status: 410 }));
      const g = await create(b, gone, { kinds: [KINDS[2].name] });
      await settled(g.group);
      await postBatch(a, [event(KINDS[2], 1, 1)]);
      await waitFor('state gone', async () => (await api(a, 'GET', `/subscriptions/${g.name}`)).body.state === 'gone', 20_000, 200);
      // Both instances stop it: each one's status says gone with no member running there (`running`
      // turns false once its member has stopped), instead of a fixed 2 s for it.
      await waitFor('both instances stopped it', async () => {
        const st = await Promise.all([a, b].map(async (gw) => (await api(gw, 'GET', `/subscriptions/${g.name}/status`)).body));
        return st.every((x) => x.state === 'gone' && x.running === false);
      }, 20_000, 100);
      const attempts = gone.deliveries().length;
      expect(attempts).toBeGreaterThanOrEqual(1);
      expect(attempts).toBeLessThanOrEqual(2); // one, or one more on the other gateway if the partition moved before it stopped
      await postBatch(a, Array.from({ length: 20 }, (_, k) => event(KINDS[2], k, 2)));
      await new Promise((r) => setTimeout(r, 2000));
      expect(gone.deliveries()).toHaveLength(attempts);
      expect((await api(b, 'GET', `/subscriptions/${g.name}`)).body).toMatchObject({ state: 'gone' });
      // The instance that got the 410 says why in its status; the other may never have delivered.
      const statuses = await Promise.all([a, b].map(async (gw) => (await api(gw, 'GET', `/subscriptions/${g.name}/status`)).body as { state: string; retried: number; lastError: { reason: string } | null }));
      for (const st of statuses) {
        expect(st.state).toBe('gone');
        // The attempt held after the 410 is cut by the member's stop: not a retry (it once counted as one, "consumer stopping").
        expect(st.retried).toBe(0);
      }
      expect(statuses.some((st) => st.lastError !== null && st.lastError.reason.includes('410'))).toBe(true);
      await api(a, 'DELETE', `/subscriptions/${g.name}`);
    };
    await Promise.all([retryAfter(), gone410()]);
  });

  it('SIGKILL of one gateway mid-stream: every event at least once, duplicates ≤ its deliveries of the last second', async () => {
    const s = await sink();
    const { group } = await create(b, s, { concurrency: 6 });
    let probe = 0;
    await runningOnBoth(group, () => postBatch(b, Array.from({ length: 20 }, (_, k) => event(KINDS[0], k, ++probe, { subject: 'probe' }))));
    const aConns = new Set(s.deliveries().map((r) => r.conn)); // both gateways' connections so far
    const sent: Record<string, unknown>[] = [];
    let killedAt = 0;
    for (let i = 0; i < 40; i++) {
      const batch = Array.from({ length: 25 }, (_, k) => event(KINDS[0], k % 20, 1000 + i, { subject: 'load' }));
      sent.push(...batch);
      await postBatch(b, batch);
      if (i === 15) {
        process.kill(a.pid, 'SIGKILL');
        killedAt = performance.now();
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    await waitFor('every event delivered', () => {
      const ids = new Set(s.deliveries().map(idOf));
      return sent.every((e) => ids.has(e.id as string));
    }, 90_000, 500);
    const load = s.deliveries().filter((r) => r.headers['ce-subject'] === 'load');
    const duplicates = load.length - new Set(load.map(idOf)).size;
    // Connections that closed at the kill were the killed gateway's.
    const deadConns = new Set([...s.closedAt].filter(([c, t]) => aConns.has(c) && Math.abs(t - killedAt) < 2000).map(([c]) => c));
    const lastSecond = load.filter((r) => deadConns.has(r.conn) && r.atMs >= killedAt - 1000 && r.atMs <= killedAt).length;
    expect(deadConns.size).toBeGreaterThan(0);
    expect(duplicates).toBeLessThanOrEqual(lastSecond);
  });
});
