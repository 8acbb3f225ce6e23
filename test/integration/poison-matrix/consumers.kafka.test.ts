/**
 * Breaker matrix: generated poison records (test/helpers/poison-records.ts) written straight to
 * the catalog topic, on one partition, then a good record. A library subscription, a push
 * subscription (webhook sink on loopback) and a pull subscription of one gateway must each deliver
 * the good record, dead-letter every poison one with a reason, and keep running.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_TOPIC } from '../../fixtures/events.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { ceHeaders, goodPriceValue, poisonCases } from '../../helpers/poison-records.js';
import { startSink } from '../../helpers/sink.js';
import type { TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import type { TransportRecord } from '../../../src/transport/port.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
let gw: TestGateway;
let sink: TestSink;
beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { SUBSCRIPTIONS_TOPIC: `${uniqueName('brkA-defs')}.subscriptions`, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'), WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } });
  await gw.gateway.subscriptionsLoaded();
  sink = await startSink();
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await sink?.close();
});

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown; headers: Headers }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as unknown), headers: res.headers };
}

async function deadLetters(topic: string, atLeast: number): Promise<TransportRecord[]> {
  const out: TransportRecord[] = [];
  const reader = await gw.gateway.transport.consume({ group: uniqueName('brkA-dlq-reader'), topics: [topic], startFrom: 'earliest' }, async (r) => void out.push(r));
  try {
    await waitFor(`${atLeast} dead letters on ${topic}`, () => out.length >= atLeast, 20_000, 200).catch(() => undefined);
  } finally {
    await reader.stop();
  }
  return out;
}

const header = (r: TransportRecord, name: string): string | undefined => {
  const h = r.headers.find(([n]) => n === name);
  return h && dec.decode(h[1]);
};

describe('generated poison records before a good one, on one partition', () => {
  it('library, push and pull subscriptions dead-letter each with a reason and deliver the good record', async () => {
    const tag = randomUUID().slice(0, 8);
    const lib = uniqueName('brkA-lib');
    const push = `brkApush${tag}`;
    const pull = `brkApull${tag}`;
    const handled: string[] = [];
    const sub = await gw.gateway.subscribe({ subscription: lib, kinds: ['PriceLoadingCompleted'], handler: (e) => void handled.push(e.attributes.id) });
    expect((await api('POST', '/subscriptions', { name: push, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: sink.url, handshake: false } })).body).toMatchObject({ name: push });
    expect((await api('POST', '/subscriptions', { name: pull, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).body).toMatchObject({ name: pull });
    const codec = gw.gateway.codec();
    const key = enc.encode(`BRK-${tag}`);
    const t = gw.gateway.transport;
    const pushedIds = (): string[] => sink.deliveries().map((d) => String(d.headers['ce-id']));
    // A sentinel first: the push subscription's member holds its partitions once it arrives.
    const sentinel = `${tag}-sentinel`;
    await t.produce(PRICE_TOPIC, [{ key, partition: 0, value: goodPriceValue(codec), headers: ceHeaders(sentinel) }]);
    await waitFor('the sentinel pushed', () => pushedIds().includes(sentinel), 60_000, 100);
    await waitFor('the sentinel handled', () => handled.includes(sentinel), 60_000, 100);

    const cases = poisonCases(codec, tag);
    const offsets = new Map<string, string>();
    for (const c of cases) {
      const [p] = await t.produce(PRICE_TOPIC, [{ key, partition: 0, value: c.value, headers: c.headers }]);
      offsets.set(p!.offset.toString(), c.name);
    }
    const goodId = `${tag}-good`;
    await t.produce(PRICE_TOPIC, [{ key, partition: 0, value: goodPriceValue(codec), headers: ceHeaders(goodId) }]);

    await waitFor('the good record handled (library)', () => handled.includes(goodId), 120_000, 100);
    await waitFor('the good record pushed', () => pushedIds().includes(goodId), 120_000, 100);
    const pulled: string[] = [];
    let cursor: string | undefined;
    await waitFor('the good record pulled', async () => {
      const r = await api('GET', `/subscriptions/${pull}/events?max=1000&wait=2${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      if (r.status !== 200) throw new Error(`pull answered ${r.status}: ${JSON.stringify(r.body)}`);
      cursor = r.headers.get('ce-gateway-cursor') ?? cursor;
      for (const e of r.body as { id: string }[]) pulled.push(e.id);
      return pulled.includes(goodId);
    }, 120_000, 100);

    for (const [who, topic] of [['library', `${lib}.dlq`], ['push', `ce-gateway.sub.anonymous.${push}.dlq`], ['pull', `ce-gateway.sub.anonymous.${pull}.dlq`]] as const) {
      const dlq = await deadLetters(topic, cases.length);
      const bySource = new Map(dlq.filter((r) => header(r, 'dlq_source_topic') === PRICE_TOPIC).map((r) => [header(r, 'dlq_source_offset') ?? '', header(r, 'dlq_reason') ?? '']));
      expect.soft([...offsets.keys()].filter((o) => !bySource.has(o)).map((o) => offsets.get(o)), `${who}: poison records not dead-lettered`).toEqual([]);
      for (const o of offsets.keys()) expect.soft(bySource.get(o), offsets.get(o)).toMatch(/^poison: /);
    }

    // Nothing but the good events reached a handler, and every consumer still runs.
    expect.soft(handled.filter((i) => i.startsWith(tag))).toEqual([sentinel, goodId]);
    expect.soft(pushedIds().filter((i) => i.startsWith(tag))).toEqual([sentinel, goodId]);
    expect(pulled.filter((i) => i.startsWith(tag))).toEqual([sentinel, goodId]);
    await sub.unsubscribe();
  }, 600_000);
});
