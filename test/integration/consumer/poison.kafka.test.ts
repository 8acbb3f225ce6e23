/**
 * Issue 7, "bounded work per record" and "structured records skip no schema", on the real broker.
 * Records are written by a raw client (kafkajs), as a foreign producer would, past the gateway's
 * ingress checks. A subscriber is a real `ce-gateway subscribe` process.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app/index.js';
import { DEAD_LETTER_HEADERS, deadLetterTopic, subscriptionTopics } from '../../../src/bus/subscriber/index.js';
import type { Envelope } from '../../../src/envelope/types.js';
import type { TransportRecord } from '../../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../../fixtures/events.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ownCatalog, rawKafka } from './members.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

const cat = ownCatalog('it-poison');
const raw = rawKafka();
const producer = raw.producer({ allowAutoTopicCreation: false });
const children: ChildProcessWithoutNullStreams[] = [];
let gw: Gateway;
beforeAll(async () => {
  gw = await cat.member();
  await producer.connect();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await producer.disconnect();
  await cat.close();
});

const dec = new TextDecoder();
const header = (r: TransportRecord, name: string): string | undefined => {
  const h = r.headers.find(([n]) => n === name);
  return h === undefined ? undefined : dec.decode(h[1]);
};

/** Every record of a topic, read without a group. */
async function readAll(topic: string): Promise<TransportRecord[]> {
  const out: TransportRecord[] = [];
  const read = await gw.transport.read({ topics: [topic], from: { kind: 'earliest' }, untilEnd: true }, (r) => Promise.resolve(void out.push(r)));
  await read.done;
  return out;
}

/** `ce-gateway subscribe` on this run's catalog; resolves once it has joined. */
async function subscriberProcess(name: string): Promise<{ child: ChildProcessWithoutNullStreams; lines: { attributes: Record<string, unknown>; data: unknown }[]; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [...CLI_ENTRY, 'subscribe', '--subscription', name, '--kind', 'PriceLoadingCompleted'], {
    env: { ...process.env, ...cat.env(), LOG_LEVEL: 'warn' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: { attributes: Record<string, unknown>; data: unknown }[] = [];
  createInterface({ input: child.stdout }).on('line', (l) => lines.push(JSON.parse(l) as { attributes: Record<string, unknown>; data: unknown }));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await waitFor(`subscriber ${name} joined`, () => {
    if (child.exitCode !== null) throw new Error(`subscriber exited: ${stderr}`);
    return stderr.includes(`subscribed ${name}`);
  }, 60_000);
  return { child, lines, exited };
}

function manyHeaders(n: number): Record<string, string> {
  const h: Record<string, string> = { ce_specversion: '1.0', ce_id: randomUUID(), ce_source: 'urn:raw', ce_type: PRICE_LOADING_COMPLETED };
  for (let i = 0; i < n; i++) h[`x-h${i}`] = 'v';
  return h;
}

describe('records that break the header limits', () => {
  it('a record with 50,000 headers and one with a single 900 KB header are each dead-lettered with a reason; the next record is handled; SIGTERM ends the subscriber within 5 s while such a record is in hand', async () => {
    const name = uniqueName('it-poison-headers');
    await gw.transport.ensureTopics(subscriptionTopics(name));
    const sub = await subscriberProcess(name);
    const key = 'POISON-X_H1';
    await producer.send({ topic: cat.priceTopic, messages: [{ key, value: 'not avro', headers: manyHeaders(50_000) }] });
    await producer.send({ topic: cat.priceTopic, messages: [{ key, value: 'not avro', headers: { ce_id: randomUUID(), ce_subject: 'x'.repeat(900_000) } }] });
    const next = gw.publisher().publish('PriceLoadingCompleted', priceLoaded('POISON/X', 'H1'))!;
    await next.delivered;
    await waitFor('the next record handled', () => sub.lines.some((l) => l.attributes.id === next.id), 30_000);

    const dead = await waitFor('two dead letters', async () => {
      const rs = await readAll(deadLetterTopic(name));
      return rs.length >= 2 ? rs : undefined;
    }, 30_000);
    expect(dead).toHaveLength(2);
    const reasons = dead.map((r) => header(r, DEAD_LETTER_HEADERS.reason));
    expect(reasons[0]).toMatch(/50004 attributes, more than maxAttributes \(100\)/);
    expect(reasons[1]).toMatch(/maxAttributeBytes/);
    for (const r of dead) {
      // The dead letter does not copy the offending headers: a reader of the dead-letter topic stays fast.
      expect(r.headers.length).toBeLessThan(20);
      expect(r.headers.reduce((n, [k, v]) => n + k.length + v.byteLength, 0)).toBeLessThan(8192);
      expect(Number(header(r, DEAD_LETTER_HEADERS.headersDropped))).toBeGreaterThan(0);
      expect(header(r, DEAD_LETTER_HEADERS.sourceTopic)).toBe(cat.priceTopic);
    }

    // SIGTERM while such records are in hand: the process ends within 5 s.
    for (let i = 0; i < 3; i++) await producer.send({ topic: cat.priceTopic, messages: [{ key, value: 'not avro', headers: manyHeaders(50_000) }] });
    const t0 = Date.now();
    sub.child.kill('SIGTERM');
    const code = await sub.exited;
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(code).toBe(0);
  }, 120_000);
});

describe('structured-mode records', () => {
  it('a structured-mode record whose data does not match the kind schema is dead-lettered naming the field; valid structured records (JSON data, and Avro in data_base64) reach the handler decoded exactly like their binary-mode twins', async () => {
    const name = uniqueName('it-structured');
    const got = new Map<string, Envelope>();
    const sub = await gw.subscribe({ subscription: name, kinds: ['PriceLoadingCompleted'], handler: (e) => Promise.resolve(void got.set(e.attributes.id, e)) });
    try {
      const data = priceLoaded('STRUCT/X', 'H1');
      const twin = gw.publisher().publish('PriceLoadingCompleted', data)!;
      await twin.delivered;
      const codec = gw.codec();
      const framed = codec.encodeData(codec.binding(PRICE_LOADING_COMPLETED)!, data);
      const asJson = structuredPriceEvent({ id: `json-${randomUUID()}` }, data);
      const asAvro = structuredPriceEvent({ id: `avro-${randomUUID()}`, datacontenttype: 'application/avro', data: undefined, data_base64: Buffer.from(framed).toString('base64') });
      const bad = structuredPriceEvent({ id: `bad-${randomUUID()}` }, { ...data, barsLoaded: 'many' });
      const structured = (e: Record<string, unknown>) => ({ key: 'STRUCT-X_H1', value: JSON.stringify(e), headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' } });
      await producer.send({ topic: cat.priceTopic, messages: [structured(bad), structured(asJson), structured(asAvro)] });
      await waitFor('three events handled', () => got.size === 3 && sub.stats().deadLettered === 1, 30_000);
      const binaryData = got.get(twin.id)!.data;
      expect(binaryData?.kind).toBe('json');
      for (const id of [asJson.id, asAvro.id] as string[]) {
        const e = got.get(id)!;
        expect(e.data).toEqual(binaryData);
        expect(e.attributes.datacontenttype).toBe('application/json');
      }
      const dead = await readAll(deadLetterTopic(name));
      expect(dead).toHaveLength(1);
      expect(header(dead[0]!, DEAD_LETTER_HEADERS.reason)).toMatch(/barsLoaded/);
    } finally {
      await sub.unsubscribe();
    }
  }, 60_000);
});
