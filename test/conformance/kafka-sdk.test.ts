/**
 * Conformance of the Kafka side against the `cloudevents` SDK's Kafka binding (v10: `Kafka.binary`,
 * `Kafka.structured`, `Kafka.toEvent`, `Kafka.isEvent`) as the reference client, on the real stack
 * (Kafka + schema registry), with a catalog of this run's own topics.
 * - Gateway → SDK: events accepted over HTTP (binary, structured, batch) are read raw from the
 *   topic (kafkajs, no gateway code) and converted by `Kafka.toEvent`: every attribute is what was
 *   sent or what the gateway documents (README "Who fills what", "On Kafka"), the record key is
 *   the partition key, and the value is Confluent-framed Avro that the registry's writer schema
 *   (fetched over the Confluent REST API, decoded with avsc) reads back to the data sent.
 * - SDK → gateway: records whose headers and value come from `Kafka.binary` / `Kafka.structured`,
 *   written by a plain kafkajs producer, are handed out by a pull subscription with the same
 *   attributes and data; records the gateway finds invalid go to `<group>.dlq` with a reason and
 *   the good record behind them is still handed out.
 * Known SDK deviations from the binding are asserted where they show, never worked around silently:
 *   `Kafka.toEvent` and `Kafka.structured` rewrite `time` as `Date#toISOString()` (UTC, milliseconds:
 *   the offset and any finer fraction are lost); `Kafka.binary` writes `ce_datacontenttype` beside `content-type`
 *   (binding §3.2.1 maps datacontenttype to `content-type`), headers whose value is `undefined`
 *   (the 0.3 attributes `ce_schemaurl`, `ce_datacontentencoding`) and Integer extensions as
 *   numbers (binding §3.2.3: header values are UTF-8 strings), so a producer must drop the first
 *   and stringify the second before a Kafka client takes them.
 * Spec: CloudEvents Kafka protocol binding 1.0.2 §3.1 (key), §3.2 (binary), §3.3 (structured);
 *   Partitioning extension; Confluent wire format.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import avro from 'avsc';
import { CloudEvent, Kafka } from 'cloudevents';
import type { Headers as SdkHeaders, KafkaMessage } from 'cloudevents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const { Kafka: KafkaJs, logLevel } = kafkajs();
type KafkaClient = InstanceType<typeof KafkaJs>;

const DATASCHEMA_BASE = 'https://schemas.ce-gateway.example/ids/';
const SOURCE = 'urn:partner:kafka-sdk';
const BATCH = 'application/cloudevents-batch+json';

let gw: TestGateway;
let cleanupCatalog: () => void = () => undefined;
let topic = '';
let kafka: KafkaClient;
/** The registry's id and version of the schema the gateway writes PriceLoadingCompleted with. */
let schemaId = 0;
let schemaVersion = 0;
let writer: avro.Type;

beforeAll(async () => {
  const run = uniqueName('cf-kafka-sdk');
  const cat = catalogWithOwnTopics(run);
  cleanupCatalog = cat.cleanup;
  topic = `${run}.trading.price-loading-completed`;
  gw = await startGateway({
    stack: true,
    env: { CATALOG_DIR: cat.dir, DATASCHEMA_BASE_URL: DATASCHEMA_BASE, SUBSCRIPTIONS_TOPIC: `${run}.subscriptions`, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64') },
  });
  await gw.gateway.subscriptionsLoaded();
  kafka = new KafkaJs({ clientId: 'cf-kafka-sdk', brokers: [...stackEnv().kafkaBrokers], logLevel: logLevel.NOTHING });
  // The registry itself (Confluent REST API), not the gateway: what any Kafka-native reader would ask.
  const latest = (await registry(`/subjects/${encodeURIComponent(`${topic}-value`)}/versions/latest`)) as { id: number; version: number; schema: string };
  schemaId = latest.id;
  schemaVersion = latest.version;
  writer = avro.Type.forSchema(JSON.parse(latest.schema) as avro.Schema);
}, 120_000);

afterAll(async () => {
  await gw?.close();
  cleanupCatalog();
});

async function registry(path: string): Promise<unknown> {
  const res = await fetch(`${stackEnv().schemaRegistryUrl}${path}`);
  expect(res.status, path).toBe(200);
  return res.json();
}

/** A writer schema by id from the registry (`GET /schemas/ids/{id}`), as a Confluent deserializer fetches it. */
async function writerById(id: number): Promise<avro.Type> {
  const { schema } = (await registry(`/schemas/ids/${id}`)) as { schema: string };
  return avro.Type.forSchema(JSON.parse(schema) as avro.Schema);
}

/** Confluent wire format: magic byte 0, 4-byte big-endian schema id, Avro binary. */
function frame(id: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(id, 1);
  return Buffer.concat([head, body]);
}

function unframe(value: Buffer): { id: number; body: Buffer } {
  expect(value[0], 'Confluent magic byte').toBe(0);
  return { id: value.readUInt32BE(1), body: value.subarray(5) };
}

/** The price data as the registry's schema holds it: timestamp-millis as epoch milliseconds (avsc without logical types). */
function asAvro(data: ReturnType<typeof priceLoaded>): Record<string, unknown> {
  return { ...data, firstBarAt: data.firstBarAt === undefined || data.firstBarAt === null ? null : Date.parse(data.firstBarAt), completedAt: Date.parse(data.completedAt), feed: data.feed ?? null };
}

interface RawRecord {
  readonly key: string | null;
  readonly headers: Record<string, string>;
  readonly value: Buffer | null;
}

/** Records of `topic` read raw from the beginning by a plain kafkajs consumer until `done` holds. */
async function readRaw(from: string, done: (records: readonly RawRecord[]) => boolean): Promise<RawRecord[]> {
  const out: RawRecord[] = [];
  const consumer = kafka.consumer({ groupId: uniqueName('cf-kafka-sdk-reader') });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: from, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) {
          expect(Array.isArray(v), `header ${k} once`).toBe(false);
          headers[k] = String(v);
        }
        out.push({ key: message.key === null ? null : message.key.toString('utf8'), headers, value: message.value });
      },
    });
    await waitFor(`records on ${from}`, () => done(out), 30_000, 100);
  } finally {
    await consumer.disconnect();
  }
  return out;
}

/** What the SDK's Kafka binding makes of a raw record (its KafkaMessage: string headers and key). */
function sdkEvent(r: RawRecord): CloudEvent<unknown> {
  const msg = { key: r.key ?? undefined, headers: r.headers as SdkHeaders, value: r.value ?? undefined, body: r.value ?? undefined } as unknown as KafkaMessage<unknown>;
  expect(Kafka.isEvent(msg)).toBe(true);
  const ev = Kafka.toEvent(msg);
  if (Array.isArray(ev)) throw new Error('expected one event');
  return ev as CloudEvent<unknown>;
}

async function post(headers: Record<string, string>, body: string): Promise<void> {
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers, body });
  expect(res.status, await res.text()).toBe(202);
}

const partitionKey = (instrument: string, timeframe: string): string => `${instrument.replace(/[^A-Za-z0-9]/g, '-')}_${timeframe}`;

describe('gateway → SDK: records of events accepted over HTTP, read by Kafka.toEvent', () => {
  it('binary, structured and batch ingress give records whose attributes, key and Avro data the SDK reads as sent', async () => {
    const tag = randomUUID().slice(0, 8);
    /** `dataschema`: the partner names the registered schema (`DATASCHEMA_BASE_URL<id>`), kept as sent. */
    interface Sent { id: string; time: string; subject?: string; correlationid?: string; ext?: Record<string, string>; dataschema?: true; data: ReturnType<typeof priceLoaded> }
    const sent: Sent[] = [
      // Partner times are kept verbatim (README "Who fills what"): an offset and a microsecond fraction.
      { id: `${tag}-bin`, time: '2022-03-15T12:00:02.123456+01:00', subject: 'EUR-USD_H4', correlationid: `corr-${tag}`, ext: { myext: 'bin-ext' }, data: priceLoaded('EUR/USD', 'H4') },
      { id: `${tag}-str`, time: '2022-03-15T12:00:03Z', subject: 'GBP-USD H1 Grüße', ext: { myext: 'str-ext', myint: '42' }, data: { ...priceLoaded('GBP/USD', 'H1'), feed: 'lmax' } },
      { id: `${tag}-b1`, time: '2022-03-15T12:00:04.5-05:30', data: priceLoaded('USD/JPY', 'M15') },
      { id: `${tag}-b2`, time: '2022-03-15T12:00:05.000Z', correlationid: `corr-${tag}-b2`, ext: { myext: 'batch' }, dataschema: true, data: { ...priceLoaded('AUD/USD', 'D1'), firstBarAt: null } },
    ];
    const [bin, str, b1, b2] = sent as [Sent, Sent, Sent, Sent];
    await post(
      { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': bin.id, 'ce-source': SOURCE, 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': bin.time, 'ce-subject': bin.subject!, 'ce-correlationid': bin.correlationid!, 'ce-myext': bin.ext!.myext! },
      JSON.stringify(bin.data),
    );
    const structured = (s: Sent, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      specversion: '1.0', id: s.id, source: SOURCE, type: PRICE_LOADING_COMPLETED, time: s.time, datacontenttype: 'application/json',
      ...(s.subject === undefined ? {} : { subject: s.subject }), ...(s.correlationid === undefined ? {} : { correlationid: s.correlationid }),
      ...(s.dataschema === undefined ? {} : { dataschema: `${DATASCHEMA_BASE}${schemaId}` }), ...s.ext, ...extra, data: s.data,
    });
    await post({ 'content-type': 'application/cloudevents+json' }, JSON.stringify(structured(str, { myint: 42 })));
    await post({ 'content-type': BATCH }, JSON.stringify([structured(b1), structured(b2)]));

    const records = await readRaw(topic, (rs) => sent.every((s) => rs.some((r) => r.headers.ce_id === s.id)));
    for (const s of sent) {
      const r = records.find((x) => x.headers.ce_id === s.id)!;
      const key = partitionKey(s.data.instrument, s.data.timeframe);
      // §3.1 key mapping: the record key is the partitionkey attribute as-is; the attribute is still sent.
      expect(r.key, s.id).toBe(key);
      expect(r.headers.ce_partitionkey).toBe(key);
      // §3.2.1: binary content mode, content-type = datacontenttype of the value (Avro); no ce_datacontenttype.
      expect(r.headers['content-type']).toBe('application/avro');
      expect(r.headers).not.toHaveProperty('ce_datacontenttype');
      expect(r.headers.ce_time, 'time kept verbatim on the wire').toBe(s.time);

      const ev = sdkEvent(r);
      expect(ev.specversion).toBe('1.0');
      expect(ev.id).toBe(s.id);
      expect(ev.source).toBe(SOURCE);
      expect(ev.type).toBe(PRICE_LOADING_COMPLETED);
      expect(ev.subject).toBe(s.subject);
      expect(ev.datacontenttype).toBe('application/avro');
      expect(ev.dataschema).toBe(`${DATASCHEMA_BASE}${schemaId}`);
      expect(ev.partitionkey).toBe(key);
      // SDK deviation: toEvent rewrites time as Date#toISOString() (UTC, milliseconds).
      expect(ev.time).toBe(new Date(s.time).toISOString());
      const ext = ev as unknown as Record<string, unknown>;
      // Binary mode has no types: Integer attributes and extensions arrive as their canonical strings.
      expect(ext.schemaversion).toBe(String(schemaVersion));
      expect(ext.eventname).toBe('PriceLoadingCompleted');
      expect(ext.eventclass).toBe('notification');
      if (s.correlationid === undefined) expect(ext.correlationid, 'a new correlationid when none came').toMatch(/\S/);
      else expect(ext.correlationid).toBe(s.correlationid);
      for (const [k, v] of Object.entries(s.ext ?? {})) expect(ext[k], k).toBe(v);
      // Nothing else: every attribute the SDK sees is one sent or one the gateway documents filling.
      // (SDK deviation: the event also holds the 0.3 attributes schemaurl and datacontentencoding, undefined.)
      const names = Object.entries(ev.toJSON()).filter(([n, v]) => v !== undefined && n !== 'data' && n !== 'data_base64').map(([n]) => n).sort();
      expect(names).toEqual(['correlationid', 'datacontenttype', 'dataschema', 'eventclass', 'eventname', 'id', 'partitionkey', 'schemaversion', 'source', 'specversion', 'time', 'type', ...(s.subject === undefined ? [] : ['subject']), ...Object.keys(s.ext ?? {})].sort());

      // The SDK hands the value on as bytes: Confluent-framed Avro, read with the registry's writer schema.
      expect(ev.data).toBeInstanceOf(Uint8Array);
      const { id, body } = unframe(Buffer.from(ev.data as Uint8Array));
      expect(id).toBe(schemaId);
      expect((await writerById(id)).fromBuffer(body)).toEqual(asAvro(s.data));
    }
  });
});

describe('gateway → SDK: an event without data', () => {
  it('SDK deviation: Kafka.toEvent refuses the binary-mode record of an event without data (§3.2.2: a record with no value), as the gateway writes one', () => {
    // What the gateway's codec writes for an event without data (README "On Kafka": a tombstone).
    const headers = { ce_specversion: '1.0', ce_id: 'no-data', ce_source: SOURCE, ce_type: PRICE_LOADING_COMPLETED, ce_time: '2022-03-15T12:00:02Z' };
    const tombstone = { key: 'EUR-USD_H4', headers, value: undefined, body: undefined } as unknown as KafkaMessage<unknown>;
    expect(Kafka.isEvent(tombstone)).toBe(true);
    expect(() => Kafka.toEvent(tombstone)).toThrow('Value is null or undefined');
  });
});

/**
 * A subscription's pull (long-poll, cursor carried on) until every id of `ids` came, or 20 s passed:
 * the caller asserts on what came, so a missing event shows as a diff rather than a time-out.
 */
async function pullFor(name: string, ids: readonly string[]): Promise<Record<string, unknown>[]> {
  const got: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  const deadline = Date.now() + 20_000;
  while (!ids.every((id) => got.some((e) => e.id === id)) && Date.now() < deadline) {
    const res = await fetch(`${gw.url}/subscriptions/${name}/events?max=100&wait=2${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    expect(res.status).toBe(200);
    got.push(...((await res.json()) as Record<string, unknown>[]));
    cursor = res.headers.get('ce-gateway-cursor') ?? undefined;
  }
  return got;
}

/** Dead letters of a subscription (ce_id → dlq_reason), to show why an event did not come. */
async function deadLetterReasons(dlq: string): Promise<Record<string, string>> {
  const ends = await gw.gateway.transport.endOffsets(dlq).catch(() => []);
  if (ends.every((p) => p.offset === 0n)) return {};
  const dead = await readRaw(dlq, (rs) => rs.length >= ends.reduce((n, p) => n + Number(p.offset), 0));
  return Object.fromEntries(dead.map((r) => [deadId(r), r.headers.dlq_reason ?? '?']));
}

/** The CloudEvents id of a dead letter: its `ce_id` header (binary mode) or its value's `id` (structured mode). */
function deadId(r: RawRecord): string {
  if (r.headers.ce_id !== undefined) return r.headers.ce_id;
  try {
    return String((JSON.parse(r.value?.toString('utf8') ?? 'null') as { id?: unknown } | null)?.id);
  } catch {
    return '?';
  }
}

/** What a plain producer writes for an SDK message: the SDK's key, headers and value as they are (nothing dropped). */
async function produce(messages: readonly { key: string | null | undefined; headers: Record<string, string>; value: Buffer | string }[]): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: messages.map((m) => ({ key: m.key ?? null, headers: m.headers, value: m.value })) });
  } finally {
    await producer.disconnect();
  }
}

/**
 * The SDK's binary-mode headers as a Kafka client takes them. Asserts the SDK's deviations from
 * §3.2.3 (values MUST be UTF-8 strings) rather than hiding them: undefined values for the 0.3
 * attributes, which a producer has to drop, and numbers, which it has to write as their strings.
 */
function kafkaHeaders(msg: KafkaMessage<unknown>): Record<string, string> {
  const h = msg.headers as Record<string, unknown>;
  expect(Object.keys(h).filter((k) => h[k] === undefined), 'SDK deviation: headers with an undefined value').toEqual(expect.arrayContaining(['ce_datacontentencoding', 'ce_schemaurl']));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    if (typeof v === 'number') {
      expect(k, 'SDK deviation: an Integer extension as a number').toBe('ce_schemaversion');
      out[k] = String(v);
    } else {
      expect(typeof v, k).toBe('string');
      out[k] = v as string;
    }
  }
  return out;
}

async function createPull(): Promise<{ name: string; dlq: string }> {
  const name = `cfkafkasdk${randomUUID().slice(0, 8)}`;
  const res = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
  expect(res.status, await res.text()).toBe(201);
  return { name, dlq: `ce-gateway.sub.anonymous.${name}.dlq` };
}

/** An offset and a fraction finer than milliseconds: both are the producer's and must survive the trip. */
const SDK_TIME = '2022-03-15T12:00:02.250123+01:00';

describe('SDK → gateway: records from Kafka.binary and Kafka.structured, handed out by a pull subscription', () => {
  it('delivers binary (framed Avro) and structured (data_base64 Avro, JSON data) records with the same attributes and data', async () => {
    const { name, dlq } = await createPull();
    const tag = randomUUID().slice(0, 8);
    const attrs = (id: string, instrument: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      specversion: '1.0', id, source: 'urn:kafka-native:svc-1', type: PRICE_LOADING_COMPLETED, time: SDK_TIME, subject: partitionKey(instrument, 'H4'),
      dataschema: `${DATASCHEMA_BASE}${schemaId}`, correlationid: `corr-${id}`, schemaversion: schemaVersion, partitionkey: partitionKey(instrument, 'H4'), myext: `ext-${id}`, ...extra,
    });
    const avroValue = (data: ReturnType<typeof priceLoaded>): Buffer => frame(schemaId, writer.toBuffer(asAvro(data)));
    const cases = [
      { id: `${tag}-bin`, data: priceLoaded('EUR/USD', 'H4'), mode: 'binary' as const, avro: true },
      { id: `${tag}-str-avro`, data: { ...priceLoaded('NZD/USD', 'H4'), feed: 'sdk' }, mode: 'structured' as const, avro: true },
      { id: `${tag}-str-json`, data: priceLoaded('CHF/JPY', 'H4'), mode: 'structured' as const, avro: false },
    ];
    const events = cases.map((c) => new CloudEvent<unknown>({ ...attrs(c.id, c.data.instrument), datacontenttype: c.avro ? 'application/avro' : 'application/json', data: c.avro ? avroValue(c.data) : c.data }));
    const messages = events.map((ev, i) => {
      const c = cases[i]!;
      if (c.mode === 'binary') {
        const m = Kafka.binary(ev);
        // SDK deviation: datacontenttype goes out twice, as content-type (§3.2.1) and as ce_datacontenttype.
        expect(m.headers['content-type']).toBe('application/avro');
        expect((m.headers as Record<string, unknown>).ce_datacontenttype).toBe('application/avro');
        expect(m.key).toBe(partitionKey(c.data.instrument, 'H4'));
        return { key: m.key as string, headers: kafkaHeaders(m), value: m.value as Buffer };
      }
      const m = Kafka.structured(ev);
      expect(m.headers).toEqual({ 'content-type': 'application/cloudevents+json; charset=utf-8' });
      return { key: m.key as string, headers: m.headers as Record<string, string>, value: m.value };
    });
    await produce(messages);

    const got = await pullFor(name, cases.map((c) => c.id));
    expect({ delivered: got.map((e) => e.id).sort(), deadLettered: await deadLetterReasons(dlq) }).toEqual({ delivered: cases.map((c) => c.id).sort(), deadLettered: {} });
    for (const c of cases) {
      const e = got.find((x) => x.id === c.id)!;
      const sent = attrs(c.id, c.data.instrument);
      // Delivered as the gateway documents a pull: natural JSON data (datacontenttype application/json).
      expect(e.datacontenttype, c.id).toBe('application/json');
      expect(e.data, c.id).toEqual({ feed: null, ...c.data });
      for (const [k, v] of Object.entries(sent)) {
        // The time the record carries, kept verbatim: binary mode's header is the one given; SDK
        // deviation: Kafka.structured writes time as Date#toISOString() (UTC, the fraction cut to ms).
        if (k === 'time' && c.mode === 'structured') expect(e.time, c.id).toBe(new Date(SDK_TIME).toISOString());
        else expect(e[k], `${c.id} ${k}`).toBe(v);
      }
    }
  });

  it('dead-letters what the gateway refuses from an SDK producer with a reason, and hands out the good record behind it on the same partition', async () => {
    const { name, dlq } = await createPull();
    const tag = randomUUID().slice(0, 8);
    const key = partitionKey('SEK/NOK', 'H4');
    const base = { specversion: '1.0', source: 'urn:kafka-native:svc-2', type: PRICE_LOADING_COMPLETED, time: '2022-03-15T11:00:02.000Z', partitionkey: key };
    const good = priceLoaded('SEK/NOK', 'H4');
    const bad = [
      // Binary mode with JSON bytes as the value: the gateway's topics carry Confluent-framed Avro.
      { id: `${tag}-json-bytes`, msg: Kafka.binary(new CloudEvent<unknown>({ ...base, id: `${tag}-json-bytes`, datacontenttype: 'application/json', data: Buffer.from(JSON.stringify(good)) })), reason: /^poison: not a schema-registry framed value/ },
      // Structured mode whose data does not fit the kind's schema.
      { id: `${tag}-bad-data`, msg: Kafka.structured(new CloudEvent<unknown>({ ...base, id: `${tag}-bad-data`, datacontenttype: 'application/json', data: { ...good, barsLoaded: 'many' } })), reason: /^poison: data does not match schema .*\/barsLoaded/ },
      // Binary mode whose framed value names a schema id the registry does not have.
      { id: `${tag}-unknown-id`, msg: Kafka.binary(new CloudEvent<unknown>({ ...base, id: `${tag}-unknown-id`, datacontenttype: 'application/avro', data: frame(0x7ffffff0, writer.toBuffer(asAvro(good))) })), reason: /^poison: schema registry schema id 2147483632\b/ },
    ];
    const goodMsg = Kafka.binary(new CloudEvent<unknown>({ ...base, id: `${tag}-good`, datacontenttype: 'application/avro', schemaversion: schemaVersion, data: frame(schemaId, writer.toBuffer(asAvro(good))) }));
    const asRecord = (m: KafkaMessage<unknown>): { key: string | undefined; headers: Record<string, string>; value: Buffer | string } =>
      ({ key: m.key as string, headers: m.headers['content-type']?.startsWith('application/cloudevents') ? (m.headers as Record<string, string>) : kafkaHeaders(m), value: m.value as Buffer | string });
    // One key, so one partition: the good record sits behind the bad ones.
    await produce([...bad.map((b) => asRecord(b.msg)), asRecord(goodMsg)]);

    const got = await pullFor(name, [`${tag}-good`]);
    expect(got.map((e) => e.id)).toEqual([`${tag}-good`]);
    const dead = await readRaw(dlq, (rs) => rs.length >= bad.length);
    expect(dead).toHaveLength(bad.length);
    for (const b of bad) {
      const d = dead.find((r) => deadId(r) === b.id);
      expect(d, b.id).toBeDefined();
      expect(d!.headers.dlq_subscription).toBe(`ce-gateway.sub.anonymous.${name}`);
      expect(d!.headers.dlq_source_topic).toBe(topic);
      expect(d!.headers.dlq_reason, b.id).toMatch(b.reason);
      expect(d!.key).toBe(key);
    }
  });
});
