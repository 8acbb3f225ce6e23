import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalog } from '../../src/catalog/index.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { BATCH, catalogDirWithUnpublishedPrice, findEvent, post } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PROBLEM = 'application/problem+json';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false, env: { INGRESS_MAX_BODY_BYTES: '8192', INGRESS_MAX_BATCH_EVENTS: '3', DATASCHEMA_BASE_URL: 'https://gw.example/schemas/ids/' } });
});
afterAll(async () => {
  await gw.close();
});

const count = () => recordCount(gw.gateway, PRICE_TOPIC);

describe('POST /events: accepted', () => {
  it('structured mode: 202 with the position, and the gateway fills eventname, eventclass, schemaversion, dataschema, partitionkey, correlationid', async () => {
    const ev = structuredPriceEvent({ subject: 'EUR/USD H4' });
    const before = await count();
    const a = await post(gw.url, ev);
    expect(a.status).toBe(202);
    const events = a.body.events as Record<string, unknown>[];
    expect(events).toHaveLength(1);
    expect(Object.keys(events[0]!).sort()).toEqual(['id', 'offset', 'partition', 'topic']);
    expect(events[0]).toMatchObject({ id: ev.id, topic: PRICE_TOPIC });
    expect(typeof events[0]!.offset).toBe('string');
    expect(await count()).toBe(before + 1n);

    const found = await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, ev.id as string);
    expect(found).toBeDefined();
    const { record, env } = found!;
    expect(record.partition).toBe(events[0]!.partition);
    expect(record.offset.toString()).toBe(events[0]!.offset);
    expect(new TextDecoder().decode(record.key)).toBe('EUR-USD_H4');
    const schemaId = gw.gateway.codec().binding(PRICE_LOADING_COMPLETED)!.schema.id;
    const { correlationid, ...rest } = env.attributes;
    expect(rest).toEqual({
      specversion: '1.0',
      id: ev.id,
      source: 'urn:partner:test',
      type: PRICE_LOADING_COMPLETED,
      time: '2022-03-15T12:00:02.000+01:00', // the partner's value, verbatim
      subject: 'EUR/USD H4',
      datacontenttype: 'application/json', // decoded data is natural JSON
      eventname: 'PriceLoadingCompleted',
      eventclass: 'notification',
      schemaversion: 1,
      dataschema: `https://gw.example/schemas/ids/${schemaId}`,
      partitionkey: 'EUR-USD_H4',
    });
    expect(correlationid).toMatch(UUID);
    expect(env.data).toEqual({ kind: 'json', value: { ...priceLoaded(), feed: null } });
  });

  it('keeps a partner correlationid and traceparent, and accepts a partitionkey equal to the computed one', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const ev = structuredPriceEvent({ correlationid: 'partner-chain-1', traceparent, partitionkey: 'EUR-USD_H4' });
    const a = await post(gw.url, ev);
    expect(a.status).toBe(202);
    const { env } = (await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, ev.id as string))!;
    expect(env.attributes.correlationid).toBe('partner-chain-1');
    expect(env.attributes.traceparent).toBe(traceparent);
  });

  it('binary mode: ce-* headers and a JSON body', async () => {
    const id = `bin-${Date.now()}`;
    const a = await post(gw.url, priceLoaded('GBP/JPY', 'M15'), 'application/json', {
      'ce-specversion': '1.0',
      'ce-id': id,
      'ce-source': 'urn:partner:bin',
      'ce-type': PRICE_LOADING_COMPLETED,
      'ce-time': '2022-03-15T12:00:02Z',
    });
    expect(a.status).toBe(202);
    expect((a.body.events as { id: string }[])[0]!.id).toBe(id);
    const { env, record } = (await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, id))!;
    expect(env.attributes).toMatchObject({ source: 'urn:partner:bin', partitionkey: 'GBP-JPY_M15', eventname: 'PriceLoadingCompleted' });
    expect(new TextDecoder().decode(record.key)).toBe('GBP-JPY_M15');
  });

  it('batch mode: 202 with one position per event, in request order', async () => {
    const evs = [structuredPriceEvent({}, priceLoaded('EUR/USD')), structuredPriceEvent({}, priceLoaded('USD/CHF'))];
    const before = await count();
    const a = await post(gw.url, evs, BATCH);
    expect(a.status).toBe(202);
    expect((a.body.events as { id: string }[]).map((e) => e.id)).toEqual(evs.map((e) => e.id));
    expect(await count()).toBe(before + 2n);
  });

  it('an empty batch is accepted with no events', async () => {
    const a = await post(gw.url, [], BATCH);
    expect(a.status).toBe(202);
    expect(a.body).toEqual({ events: [] });
  });
});

describe('POST /events: refused (problem+json, nothing produced)', () => {
  async function refused(body: unknown, contentType?: string) {
    const before = await count();
    const a = await post(gw.url, body, contentType);
    expect(a.headers.get('content-type')).toContain(PROBLEM);
    expect(await count()).toBe(before);
    return a;
  }

  it('a partitionkey that differs from the computed one (no partition spoofing)', async () => {
    const a = await refused(structuredPriceEvent({ partitionkey: 'GBP-USD_H4' }));
    expect(a.status).toBe(400);
    expect(a.body.code).toBe('CEG_PARTITION_KEY_MISMATCH');
    const v = a.body.violations as { attribute?: string; reason: string }[];
    expect(v).toHaveLength(1);
    expect(v[0]!.attribute).toBe('partitionkey');
    expect(v[0]!.reason).toContain('EUR-USD_H4');
  });

  it('a dataschema of ours whose id is not written canonically (one id, one spelling)', async () => {
    const id = gw.gateway.codec().binding(PRICE_LOADING_COMPLETED)!.schema.id;
    expect((await post(gw.url, structuredPriceEvent({ dataschema: `https://gw.example/schemas/ids/${id}` }))).status).toBe(202);
    for (const spelled of [`0${id}`, `${id}.0`, ` ${id}`, `${id}e0`, `0x${id.toString(16)}`, `+${id}`, `${id}/`, '']) {
      const a = await refused(structuredPriceEvent({ dataschema: `https://gw.example/schemas/ids/${spelled}` }));
      expect(a.status, spelled).toBe(400);
      expect((a.body.violations as { attribute?: string }[])[0]!.attribute, spelled).toBe('dataschema');
    }
  });

  it('an unknown type: the answer lists the known kinds with their eventIds and links /catalog', async () => {
    const a = await refused(structuredPriceEvent({ type: 'com.example.unknown' }));
    expect(a.status).toBe(400);
    expect(a.body.code).toBe('CEG_UNKNOWN_TYPE');
    expect(a.body.violations).toEqual([
      {
        attribute: 'type',
        reason: `unknown event type "com.example.unknown": not an eventId of the catalog; known kinds: ${loadCatalog()
          .kinds.map((k) => `${k.name} = ${k.eventId}`)
          .join(', ')} (GET /catalog lists them)`,
        code: 'CEG_UNKNOWN_TYPE',
      },
    ]);
  });

  it('a business name as type: the answer gives the eventId to send instead', async () => {
    const a = await refused(structuredPriceEvent({ type: 'PriceLoadingCompleted' }));
    expect(a.status).toBe(400);
    expect(a.body.code).toBe('CEG_UNKNOWN_TYPE');
    const [v] = a.body.violations as { attribute: string; reason: string }[];
    expect(v!.attribute).toBe('type');
    expect(v!.reason).toBe(
      `unknown event type "PriceLoadingCompleted": that is the business name of a kind; type takes its eventId ${PRICE_LOADING_COMPLETED} (a stable id survives renames; names are labels, sent as eventname)`,
    );
  });

  it('an event without time', async () => {
    const ev = structuredPriceEvent();
    delete ev.time;
    const a = await refused(ev);
    expect(a.status).toBe(400);
    expect((a.body.violations as { attribute?: string }[]).map((v) => v.attribute)).toEqual(['time']);
  });

  it('data that does not match the schema, naming the field under /data', async () => {
    const a = await refused(structuredPriceEvent({}, { ...priceLoaded(), barsLoaded: 'lots' }));
    expect(a.status).toBe(400);
    expect((a.body.violations as { field?: string }[]).map((v) => v.field)).toContain('/data/barsLoaded');
  });

  it('data over the kind\'s size bound: 413 CEG_PAYLOAD_TOO_LARGE', async () => {
    const a = await refused(structuredPriceEvent({}, { ...priceLoaded(), barKey: 'k'.repeat(1100) }));
    expect(a.status).toBe(413);
    expect(a.body.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(a.body.violations).toMatchObject([{ field: '/data', reason: expect.stringMatching(/bytes of data/), limit: 'maxDataBytes', max: expect.any(Number) }]);
  });

  it('attributes that make most of an event over the kind\'s size bound: 413 naming the attributes and the bound', async () => {
    const a = await refused(structuredPriceEvent({ subject: 's'.repeat(1500) }));
    expect(a.status).toBe(413);
    expect(a.body.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    const [v] = a.body.violations as { field?: string; limit?: string; max?: number }[];
    expect(v).toMatchObject({ field: 'attributes', limit: 'maxDataBytes' });
    expect(v!.max).toBeLessThan(1500);
  });

  it('a body over INGRESS_MAX_BODY_BYTES: 413', async () => {
    const a = await refused(structuredPriceEvent({ subject: 's'.repeat(9000) }));
    expect(a.status).toBe(413);
    expect(a.body.code).toBe('CEG_PAYLOAD_TOO_LARGE');
  });

  it('a batch over INGRESS_MAX_BATCH_EVENTS: 413', async () => {
    const a = await refused([1, 2, 3, 4].map(() => structuredPriceEvent()), BATCH);
    expect(a.status).toBe(413);
    expect(a.body.code).toBe('CEG_PAYLOAD_TOO_LARGE');
  });

  it('a batch is validated as a whole: every bad event reported by index, none produced', async () => {
    const a = await refused(
      [structuredPriceEvent(), structuredPriceEvent({ type: 'nope' }), structuredPriceEvent({ partitionkey: 'X' }, priceLoaded('AUD/USD'))],
      BATCH,
    );
    expect(a.status).toBe(400);
    expect(a.body.detail).toBe('2 of 3 events are invalid; nothing was produced');
    expect((a.body.violations as { index?: number; attribute?: string }[]).map((v) => [v.index, v.attribute])).toEqual([
      [1, 'type'],
      [2, 'partitionkey'],
    ]);
  });

  it('an unsupported media type: 415', async () => {
    const a = await refused('hello', 'text/plain');
    expect(a.status).toBe(415);
    expect(a.body.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
  });
});

describe('POST /events: publish: false kinds', () => {
  let locked: TestGateway;
  beforeAll(async () => {
    locked = await startGateway({ stack: false, env: { CATALOG_DIR: catalogDirWithUnpublishedPrice() } });
  });
  afterAll(async () => {
    await locked.close();
  });

  it('are refused at ingress naming the type attribute; other kinds still pass', async () => {
    const a = await post(locked.url, structuredPriceEvent());
    expect(a.status).toBe(400);
    expect(a.body.violations).toEqual([{ attribute: 'type', reason: 'event kind PriceLoadingCompleted is not published (catalog: publish: false)', code: 'CEG_UNKNOWN_TYPE' }]);
    expect(await recordCount(locked.gateway, PRICE_TOPIC)).toBe(0n);
    const series = structuredPriceEvent(
      { type: 'd6b5e2f6-5144-43bb-a2ec-5317301b7208' },
      { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__1', barsAppended: 1, seriesLength: 10, updateId: '8c3a5f7e-2f43-4a59-9a0e-0e0f3c8b1d11', completedAt: '2022-03-15T12:00:01.250Z' },
    );
    expect((await post(locked.url, series)).status).toBe(202);
    expect(await recordCount(locked.gateway, 'trading.series-update-completed')).toBe(1n);
  });
});
