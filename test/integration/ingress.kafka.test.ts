/**
 * The main job on the real stack (issue: "Done when"): CloudEvents from the official SDK's HTTP
 * emitter (binary, structured) and curl (batch) become Avro records that kcat reads back with the
 * ce_ headers, the partitionkey as record key and the Confluent magic byte; bad input is refused
 * with problem+json and produces no record (end offsets compared before and after).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { CloudEvent, emitterFor, Mode } from 'cloudevents';
import type { Message } from 'cloudevents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { stackEnv } from '../helpers/stack.js';

const run = promisify(execFile);

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: true });
});
afterAll(async () => {
  await gw?.close();
});

interface KcatRecord {
  ts: number;
  partition: number;
  offset: number;
  key: string | null;
  headers: string[] | null;
  payload: string | null;
}

/** Reads one record with kcat (JSON envelope) and its raw value bytes. */
async function kcatRecord(topic: string, partition: number, offset: string): Promise<{ meta: KcatRecord; value: Buffer }> {
  const broker = stackEnv().kafkaBrokers[0]!;
  const base = ['-C', '-b', broker, '-t', topic, '-p', String(partition), '-o', offset, '-c', '1', '-e', '-q'];
  const { stdout } = await run('kcat', [...base, '-J']);
  const raw = await new Promise<Buffer>((resolve, reject) => {
    execFile('kcat', [...base, '-f', '%s'], { encoding: 'buffer' }, (err, out) => (err ? reject(new Error(err.message)) : resolve(out)));
  });
  return { meta: JSON.parse(stdout) as KcatRecord, value: raw };
}

/**
 * The SDK's emitter (emitterFor serialises binary or structured mode) with a fetch-based
 * transport, because the SDK's own httpTransport does not report the status code.
 */
function sdkEmitter(mode: Mode): (event: CloudEvent<unknown>) => Promise<{ status: number; body: string }> {
  const transport = async (message: Message): Promise<{ status: number; body: string }> => {
    const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: message.headers as Record<string, string>, body: message.body as string });
    return { status: res.status, body: await res.text() };
  };
  const emit = emitterFor(transport, { mode });
  return async (event) => (await emit(event)) as { status: number; body: string };
}

function headerMap(h: string[] | null): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; h && i < h.length; i += 2) m.set(h[i]!, h[i + 1]!);
  return m;
}

async function postJson(body: unknown, contentType: string): Promise<{ status: number; json: Record<string, unknown>; type: string | null }> {
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': contentType }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, type: res.headers.get('content-type') };
}

describe('ingress on Kafka with the real registry', () => {
  it('accepts a binary-mode event from the CloudEvents SDK emitter; kcat shows ce_ headers, the key and the magic byte', async () => {
    const emit = sdkEmitter(Mode.BINARY);
    const id = randomUUID();
    const event = new CloudEvent({ id, source: 'urn:partner:sdk', type: PRICE_LOADING_COMPLETED, time: '2022-03-15T12:00:02.000Z', datacontenttype: 'application/json', data: priceLoaded('GBP/JPY', 'M15') });
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const res = await emit(event);
    expect(res.status).toBe(202);
    const body = JSON.parse(String(res.body)) as { events: { id: string; topic: string; partition: number; offset: string }[] };
    expect(body.events).toHaveLength(1);
    expect(body.events[0]!.id).toBe(id);
    expect(body.events[0]!.topic).toBe(PRICE_TOPIC);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before + 1n);

    const { meta, value } = await kcatRecord(PRICE_TOPIC, body.events[0]!.partition, body.events[0]!.offset);
    const h = headerMap(meta.headers);
    expect(h.get('ce_type')).toBe(PRICE_LOADING_COMPLETED);
    expect(h.get('ce_id')).toBe(id);
    expect(h.get('ce_specversion')).toBe('1.0');
    expect(h.get('ce_correlationid')).toMatch(/^[0-9a-f-]{36}$/);
    expect(h.get('ce_schemaversion')).toMatch(/^\d+$/);
    expect(h.get('ce_eventname')).toBe('PriceLoadingCompleted');
    expect(h.get('ce_partitionkey')).toBe('GBP-JPY_M15');
    expect(h.get('content-type')).toBe('application/avro');
    expect(h.get('ce_time')).toBe('2022-03-15T12:00:02.000Z');
    expect(meta.key).toBe('GBP-JPY_M15');
    // The record timestamp is the write time, not the event's 2022 `time` (retention would delete it at once).
    expect(Math.abs(meta.ts - Date.now())).toBeLessThan(120_000);
    expect(value[0]).toBe(0);
    const schemaId = value.readUInt32BE(1);
    expect(h.get('ce_dataschema')).toBe(`${gw.gateway.config.dataschemaBase}${schemaId}`);
  });

  it('accepts a structured-mode event from the SDK emitter and keeps the partner correlationid', async () => {
    const emit = sdkEmitter(Mode.STRUCTURED);
    const correlationid = randomUUID();
    const event = new CloudEvent({ source: 'urn:partner:sdk', type: PRICE_LOADING_COMPLETED, time: '2022-03-15T13:00:02.5+01:00', correlationid, data: priceLoaded() }, false);
    const res = await emit(event);
    expect(res.status).toBe(202);
    const [stored] = (JSON.parse(String(res.body)) as { events: { partition: number; offset: string }[] }).events;
    const { meta } = await kcatRecord(PRICE_TOPIC, stored!.partition, stored!.offset);
    const h = headerMap(meta.headers);
    expect(h.get('ce_correlationid')).toBe(correlationid);
    expect(h.get('ce_time')).toBe(new Date(event.time!).toISOString()); // the SDK normalises time to UTC when it serialises
    expect(meta.key).toBe('EUR-USD_H4');
  });

  it('accepts a batch posted with curl; events of one key keep their batch order', async () => {
    const events = [1, 2, 3, 4].map((n) => structuredPriceEvent({}, priceLoaded('AUD/CAD', 'D1', `2203151${n}`)));
    const { stdout } = await run('curl', ['-sS', '-X', 'POST', `${gw.url}/events`, '-H', 'Content-Type: application/cloudevents-batch+json; charset=UTF-8', '--data-binary', JSON.stringify(events), '-w', '\n%{http_code}']);
    const [json, code] = stdout.trim().split('\n');
    expect(code).toBe('202');
    const stored = (JSON.parse(json!) as { events: { id: string; partition: number; offset: string }[] }).events;
    expect(stored.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(new Set(stored.map((e) => e.partition)).size).toBe(1);
    const offsets = stored.map((e) => BigInt(e.offset));
    for (let i = 1; i < offsets.length; i++) expect(offsets[i]).toBe(offsets[i - 1]! + 1n);
    // A partner's time keeps its offset verbatim on the wire (bus spec M5; never replaced).
    const { meta } = await kcatRecord(PRICE_TOPIC, stored[0]!.partition, stored[0]!.offset);
    expect(headerMap(meta.headers).get('ce_time')).toBe('2022-03-15T12:00:02.000+01:00');
  });

  describe('bad input: problem+json naming the attribute or field, and no record produced', () => {
    const cases: { name: string; body: () => string; contentType: string; headers?: Record<string, string>; status: number; names: string }[] = [
      { name: 'missing required attribute (source)', contentType: 'application/cloudevents+json', body: () => JSON.stringify(structuredPriceEvent({ source: undefined })), status: 400, names: 'source' },
      { name: 'unknown type', contentType: 'application/cloudevents+json', body: () => JSON.stringify(structuredPriceEvent({ type: 'no.such.kind' })), status: 400, names: 'type' },
      { name: 'array under the structured media type', contentType: 'application/cloudevents+json', body: () => JSON.stringify([structuredPriceEvent()]), status: 400, names: 'body' },
      { name: 'data that does not match the schema (unknown field)', contentType: 'application/cloudevents+json', body: () => JSON.stringify(structuredPriceEvent({}, { ...priceLoaded(), surprise: 1 })), status: 400, names: '/data/surprise' },
      { name: 'data with a wrong type', contentType: 'application/cloudevents+json', body: () => JSON.stringify(structuredPriceEvent({}, { ...priceLoaded(), barsLoaded: 'many' })), status: 400, names: '/data/barsLoaded' },
      { name: 'JSON number outside the safe-integer range', contentType: 'application/cloudevents+json', body: () => JSON.stringify(structuredPriceEvent()).replace('"barsLoaded":120', '"barsLoaded":9007199254740993'), status: 400, names: '/data/barsLoaded' },
      { name: 'time without an offset', contentType: 'application/cloudevents+json', body: () => JSON.stringify(structuredPriceEvent({ time: '2022-03-15T12:00:02' })), status: 400, names: 'time' },
      { name: 'partitionkey that differs from the computed one', contentType: 'application/cloudevents+json', body: () => JSON.stringify(structuredPriceEvent({ partitionkey: 'USD-JPY_H1' })), status: 400, names: 'partitionkey' },
      { name: 'ce-datacontenttype header in binary mode', contentType: 'application/json', headers: { 'ce-specversion': '1.0', 'ce-id': 'x1', 'ce-source': 'urn:p', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z', 'ce-datacontenttype': 'application/json' }, body: () => JSON.stringify(priceLoaded()), status: 400, names: 'datacontenttype' },
      { name: 'body over the size bound', contentType: 'application/cloudevents+json', body: () => JSON.stringify(structuredPriceEvent({ padding: 'x'.repeat(1_100_000) })), status: 413, names: 'body' },
    ];
    for (const c of cases) {
      it(`refuses ${c.name}`, async () => {
        const before = await recordCount(gw.gateway, PRICE_TOPIC);
        const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': c.contentType, ...c.headers }, body: c.body() });
        expect(res.status).toBe(c.status);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        const problem = (await res.json()) as { status: number; violations?: { attribute?: string; field?: string }[]; detail?: string };
        expect(problem.status).toBe(c.status);
        const named = JSON.stringify(problem);
        expect(named).toContain(c.names);
        expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
      });
    }

    it('refuses a whole batch with one bad event, listing it by index', async () => {
      const before = await recordCount(gw.gateway, PRICE_TOPIC);
      const events = [structuredPriceEvent(), structuredPriceEvent({ type: 'unknown.kind' }), structuredPriceEvent(), structuredPriceEvent({}, { ...priceLoaded(), barsLoaded: -1.5 })];
      const { status, json, type } = await postJson(events, 'application/cloudevents-batch+json');
      expect(status).toBe(400);
      expect(type).toMatch(/^application\/problem\+json/);
      const indexes = [...new Set((json.violations as { index: number }[]).map((v) => v.index))].sort();
      expect(indexes).toEqual([1, 3]);
      expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
    });
  });
});
