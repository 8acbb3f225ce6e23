/**
 * A poison record that is small on the wire but large once decompressed: a foreign producer's
 * gzip batch holding a 3 MiB value (not registry-framed). The source topic takes it (its limit
 * counts compressed bytes); the subscription's dead-letter topic (2 MiB, written uncompressed)
 * cannot take it whole. It must still be dead-lettered (without its value) and the good record
 * behind it on the partition delivered — by a subscription and by a pull.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransportRecord } from '../../../src/transport/port.js';
import { PRICE_TOPIC } from '../../fixtures/events.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { ceHeaders, goodPriceValue } from '../../helpers/poison-records.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { rawKafka } from '../consumer/members.js';

const dec = new TextDecoder();
/** kafkajs's CompressionTypes.GZIP (its enum is not imported here: kafkajs must load after ce-gateway). */
const GZIP = 1;
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { SUBSCRIPTIONS_TOPIC: `${uniqueName('brkA-defs')}.subscriptions`, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64') } });
  await gw.gateway.subscriptionsLoaded();
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown; headers: Headers }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as unknown), headers: res.headers };
}

async function deadLetters(topic: string): Promise<TransportRecord[]> {
  const out: TransportRecord[] = [];
  const reader = await gw.gateway.transport.consume({ group: uniqueName('brkA-dlq-reader'), topics: [topic], startFrom: 'earliest' }, async (r) => void out.push(r));
  try {
    await waitFor(`a dead letter on ${topic}`, () => out.length >= 1, 30_000, 200);
  } finally {
    await reader.stop();
  }
  return out;
}

describe('a poison record larger than the dead-letter topic once decompressed', () => {
  it('is dead-lettered without its value, and the good record behind it is delivered, by a subscription and by a pull', async () => {
    const tag = randomUUID().slice(0, 8);
    const lib = uniqueName('brkA-zlib');
    const pull = `brkAzpull${tag}`;
    const handled: string[] = [];
    const sub = await gw.gateway.subscribe({ subscription: lib, kinds: ['PriceLoadingCompleted'], handler: (e) => void handled.push(e.attributes.id) });
    expect((await api('POST', '/subscriptions', { name: pull, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).body).toMatchObject({ name: pull });
    const producer = rawKafka().producer();
    await producer.connect();
    const poisonId = `${tag}-zipped`;
    const goodId = `${tag}-good`;
    try {
      const headers = (id: string): Record<string, Buffer> => Object.fromEntries(ceHeaders(id).map(([k, v]) => [k, Buffer.from(v)]));
      await producer.send({ topic: PRICE_TOPIC, compression: GZIP, messages: [{ partition: 0, key: 'BRK-Z', value: Buffer.alloc(3 * 1024 * 1024, 0x61), headers: headers(poisonId) }] });
      await producer.send({ topic: PRICE_TOPIC, messages: [{ partition: 0, key: 'BRK-Z', value: Buffer.from(goodPriceValue(gw.gateway.codec())), headers: headers(goodId) }] });
    } finally {
      await producer.disconnect();
    }
    await waitFor('the good record handled', () => handled.includes(goodId), 60_000, 100);
    const libDead = await deadLetters(`${lib}.dlq`);
    expect(libDead.map((r) => dec.decode(r.headers.find(([k]) => k === 'ce_id')?.[1]))).toEqual([poisonId]);
    await sub.unsubscribe();

    const pulled: string[] = [];
    let last: unknown;
    await waitFor('the good record pulled', async () => {
      const r = await api('GET', `/subscriptions/${pull}/events?max=1000&wait=2`);
      last = r.body;
      if (r.status === 200) for (const e of r.body as { id: string }[]) pulled.push(e.id);
      return pulled.includes(goodId);
    }, 60_000, 500).catch((err: unknown) => {
      throw new Error(`${String(err)}; last answer ${JSON.stringify(last).slice(0, 500)}`);
    });
    const pullDead = await deadLetters(`ce-gateway.sub.anonymous.${pull}.dlq`);
    expect(pullDead.map((r) => dec.decode(r.headers.find(([k]) => k === 'ce_id')?.[1]))).toEqual([poisonId]);
    expect(pullDead[0]!.value).toBeNull();
    expect(dec.decode(pullDead[0]!.headers.find(([k]) => k === 'dlq_reason')?.[1])).toMatch(/^poison: .*framed/);
  }, 300_000);
});
