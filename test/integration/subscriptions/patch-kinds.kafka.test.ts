/**
 * A kind added to a push subscription by PATCH, on the real stack: two gateway processes (`ce-gateway
 * serve` children, always-running members) on a catalog and a definitions topic of this run's own,
 * a real HTTP sink on 127.0.0.1.
 * - Events of the added kind posted right after the PATCH's `200` are all delivered: the added
 *   topic starts where it ended when the PATCH was taken ("as latest", docs/subscriptions.md),
 *   not where it ends when the reconciler's restarted members join (~1.5 s later).
 * - A kind removed and added again resumes from the group's commit on its topic (events accepted
 *   while it was removed are delivered): a commit is never moved by a PATCH.
 * `KAFKA_CLIENT=kafkajs|platformatic npx vitest run <this file>` picks the gateways' client.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../../../bench/lib/gateway-process.js';
import { priceLoaded } from '../../fixtures/events.js';
import { acceptAll, startSink } from '../../helpers/sink.js';
import type { SinkRequest, TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { api, postBatch, startGatewayPair } from './gateway-pair.js';
import type { GatewayPair } from './gateway-pair.js';

const N = 30;

let pair: GatewayPair;
let a: GatewayProcess;
let b: GatewayProcess;
const sinks: TestSink[] = [];
let priceType = '';
let guideType = '';

async function handledOn(gw: GatewayProcess, group: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('ce_gateway_subscription_records_total{') && l.includes(`subscription="${group}"`) && l.includes('outcome="handled"'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const price = (k: number, seq: number): Record<string, unknown> => ({
  specversion: '1.0',
  id: randomUUID(),
  source: 'urn:partner:it-patch-kinds',
  type: priceType,
  time: '2026-12-01T10:00:00.000Z',
  subject: 'probe',
  data: priceLoaded(`K${k}/USD`, 'H1', String(seq).padStart(8, '0')),
});

/** A WritingGuideContentChanged event; documents `d0…` spread over the topic's partitions. */
const guide = (doc: number, revision: number, subject: string): Record<string, unknown> => ({
  specversion: '1.0',
  id: randomUUID(),
  source: 'urn:partner:it-patch-kinds',
  type: guideType,
  time: '2026-12-01T10:00:00.000Z',
  subject,
  data: { documentId: `d${doc}`, path: `guides/d${doc}.md`, change: 'MODIFIED', previousPath: null, revision, sizeBytes: 10, contentSha256: null, effectiveDate: null, changedAt: '2026-12-01T10:00:00.000Z' },
});

beforeAll(async () => {
  pair = await startGatewayPair('it-patchk');
  ({ a, b } = pair);
  priceType = pair.eventIds.get('PriceLoadingCompleted')!;
  guideType = pair.eventIds.get('WritingGuideContentChanged')!;
}, 200_000);

afterAll(async () => {
  await pair?.stop();
  await Promise.allSettled(sinks.map((s) => s.close()));
});

const idOf = (r: SinkRequest): string => String(r.headers['ce-id']);
const ofSubject = (s: TestSink, subject: string): SinkRequest[] => s.deliveries().filter((r) => r.headers['ce-subject'] === subject);

/** A push subscription to PriceLoadingCompleted, delivering from both gateways. */
async function running(): Promise<{ s: TestSink; name: string; group: string }> {
  const s = await startSink(acceptAll);
  sinks.push(s);
  const name = uniqueName('patchk').replace(/\./g, '-');
  const r = await api(a, 'POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], concurrency: 4, delivery: { mode: 'push', url: s.url } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const group = r.body.group as string;
  let seq = 0;
  await waitFor(`${group} delivering from both gateways`, async () => {
    await postBatch(a, Array.from({ length: 20 }, (_, k) => price(k, ++seq)));
    return (await handledOn(a, group)) > 0 && (await handledOn(b, group)) > 0;
  }, 30_000, 300);
  return { s, name, group };
}

describe('PATCH adding a kind to a push subscription', () => {
  it(`delivers every event of the added kind accepted after the 200 (${N} posted at once)`, async () => {
    const { s, name } = await running();
    const patched = await api(b, 'PATCH', `/subscriptions/${name}`, { kinds: ['PriceLoadingCompleted', 'WritingGuideContentChanged'] });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const sent = Array.from({ length: N }, (_, i) => guide(i, 1, 'added'));
    await postBatch(a, sent.slice(0, N / 2));
    await postBatch(b, sent.slice(N / 2));
    const ids = sent.map((e) => e.id as string);
    await waitFor(`the ${N} events of the added kind`, () => ofSubject(s, 'added').length >= N, 30_000, 200).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 1000)); // a duplicate would show now
    const got = ofSubject(s, 'added').map(idOf);
    expect(new Set(got)).toEqual(new Set(ids));
    expect(got).toHaveLength(N);
    expect(await api(a, 'DELETE', `/subscriptions/${name}`)).toMatchObject({ status: 204 });
  });

  it('a kind removed and added again resumes from its commit: the events accepted meanwhile are delivered', async () => {
    const { s, name } = await running();
    const both = ['PriceLoadingCompleted', 'WritingGuideContentChanged'];
    expect((await api(b, 'PATCH', `/subscriptions/${name}`, { kinds: both })).status).toBe(200);
    const first = Array.from({ length: 10 }, (_, i) => guide(i, 1, 'first'));
    await postBatch(a, first);
    await waitFor('the first events of the added kind', () => ofSubject(s, 'first').length >= first.length, 30_000, 200);
    await new Promise((r) => setTimeout(r, 1000)); // their offsets are committed (every 250 ms)
    expect((await api(a, 'PATCH', `/subscriptions/${name}`, { kinds: ['PriceLoadingCompleted'] })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 3000)); // both gateways run the subscription without the kind
    const meanwhile = Array.from({ length: 10 }, (_, i) => guide(i, 2, 'meanwhile'));
    await postBatch(a, meanwhile);
    await new Promise((r) => setTimeout(r, 1000));
    expect(ofSubject(s, 'meanwhile')).toHaveLength(0);
    expect((await api(b, 'PATCH', `/subscriptions/${name}`, { kinds: both })).status).toBe(200);
    const after = Array.from({ length: 10 }, (_, i) => guide(i, 3, 'after'));
    await postBatch(b, after);
    await waitFor('the events posted meanwhile and after', () => ofSubject(s, 'meanwhile').length >= 10 && ofSubject(s, 'after').length >= 10, 30_000, 200).catch(() => undefined);
    expect(new Set(ofSubject(s, 'meanwhile').map(idOf))).toEqual(new Set(meanwhile.map((e) => e.id as string)));
    expect(new Set(ofSubject(s, 'after').map(idOf))).toEqual(new Set(after.map((e) => e.id as string)));
    expect(await api(a, 'DELETE', `/subscriptions/${name}`)).toMatchObject({ status: 204 });
  });

  it('added while paused: a replay dry run counts from the start kept for the added kind (not from its end), and resuming delivers every event accepted meanwhile', async () => {
    const { s, name } = await running();
    expect((await api(a, 'PATCH', `/subscriptions/${name}`, { state: 'paused' })).status).toBe(200);
    await waitFor('no member on either gateway', async () => {
      const [sa, sb] = await Promise.all([api(a, 'GET', `/subscriptions/${name}/status`), api(b, 'GET', `/subscriptions/${name}/status`)]);
      return sa.body.running === false && sb.body.running === false;
    }, 30_000, 200);
    // Paused: no member takes the added topic's start; it stays in the definition (startAt).
    expect((await api(b, 'PATCH', `/subscriptions/${name}`, { kinds: ['PriceLoadingCompleted', 'WritingGuideContentChanged'] })).status).toBe(200);
    const K = 12;
    const meanwhile = Array.from({ length: K }, (_, i) => guide(i, 1, 'while-paused'));
    await postBatch(a, meanwhile);
    const catalog = await api<{ kinds: { name: string; topic: string }[] }>(a, 'GET', '/catalog');
    const guideTopic = catalog.body.kinds.find((k) => k.name === 'WritingGuideContentChanged')!.topic;
    const dry = await api<{ partitions: Record<string, { from: string; to: string; events: number; skipped: number }> }>(b, 'POST', `/subscriptions/${name}/replay`, { to: 'latest', dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    const ofGuide = Object.entries(dry.body.partitions).filter(([k]) => k.startsWith(`${guideTopic}/`)).map(([, p]) => p);
    expect(ofGuide.length).toBeGreaterThan(0);
    // Moving to latest would skip exactly the events accepted since the PATCH: the members start at its positions.
    expect(ofGuide.reduce((n, p) => n + p.skipped, 0), JSON.stringify(dry.body)).toBe(K);
    // The status's lag counts from the same positions: the events accepted since the PATCH.
    const status = await api<{ lag: { partitions: { topic: string; committedOffset: string | null; startOffset?: string; lag: number | null }[] } }>(a, 'GET', `/subscriptions/${name}/status`);
    const guideLag = status.body.lag.partitions.filter((p) => p.topic === guideTopic);
    expect(guideLag.length, JSON.stringify(status.body)).toBeGreaterThan(0);
    expect(guideLag.every((p) => p.committedOffset === null && p.startOffset !== undefined), JSON.stringify(guideLag)).toBe(true);
    expect(guideLag.reduce((n, p) => n + (p.lag ?? 0), 0)).toBe(K);
    expect((await api(a, 'PATCH', `/subscriptions/${name}`, { state: 'active' })).status).toBe(200);
    await waitFor('the events accepted while paused', () => ofSubject(s, 'while-paused').length >= K, 30_000, 200).catch(() => undefined);
    expect(new Set(ofSubject(s, 'while-paused').map(idOf))).toEqual(new Set(meanwhile.map((e) => e.id as string)));
    expect(await api(a, 'DELETE', `/subscriptions/${name}`)).toMatchObject({ status: 204 });
  });
});
