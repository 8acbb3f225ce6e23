import { describe, expect, it } from 'vitest';
import { AVRO_CONTENT_TYPE, EventCodec } from '../../../src/codec/event/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import type { Attributes, JsonValue } from '../../../src/envelope/types.js';
import type { SchemaRegistry } from '../../../src/registry/port.js';
import type { OutboundRecord, TransportRecord } from '../../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../../fixtures/events.js';
import { codecFixture } from '../bus/helpers.js';
import { caughtAsync as rejection } from '../../helpers/errors.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const data = priceLoaded() as unknown as JsonValue;
const attrs: Attributes = { specversion: '1.0', id: 'e1', source: 'urn:x', type: PRICE_LOADING_COMPLETED, partitionkey: 'EUR-USD_H4' };

const consumed = (r: OutboundRecord, offset = 0n): TransportRecord => ({ topic: 'trading.price-loading-completed', partition: 1, offset, timestampMs: r.timestampMs ?? 0, key: r.key, value: r.value, headers: r.headers });

describe('EventCodec', () => {
  it('binds every catalog kind to the schema registered at start-up; unknown ids have no binding', async () => {
    const { codec, catalog } = await codecFixture();
    for (const kind of catalog.kinds) {
      const b = codec.binding(kind.eventId)!;
      expect(b.kind).toBe(kind);
      expect(b.schema.subject).toBe(kind.subject);
      expect(b.schema.version).toBe(1);
    }
    expect(codec.binding('PriceLoadingCompleted')).toBeUndefined();
    expect(codec.catalog).toBe(catalog);
  });

  it('encodes data in the Confluent frame: magic byte 0 and the 4-byte big-endian schema id', async () => {
    const { codec } = await codecFixture();
    const b = codec.binding(PRICE_LOADING_COMPLETED)!;
    const framed = codec.encodeData(b, data);
    expect(framed[0]).toBe(0);
    expect(new DataView(framed.buffer, framed.byteOffset, framed.byteLength).getUint32(1, false)).toBe(b.schema.id);
    expect(framed.length).toBeGreaterThan(5);
  });

  it('refuses data that does not fit the schema with CEG_INVALID_DATA listing the field', async () => {
    const { codec } = await codecFixture();
    let err: unknown;
    try {
      codec.encodeData(codec.binding(PRICE_LOADING_COMPLETED)!, { instrument: 'EUR/USD' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('CEG_INVALID_DATA');
    const fields = ((err as GatewayError).details.violations as { field: string }[]).map((v) => v.field);
    expect(fields).toEqual(expect.arrayContaining(['/timeframe', '/barKey', '/barsLoaded', '/completedAt']));
  });

  it('toRecord labels Avro data application/avro and writes no content-type for a tombstone', async () => {
    const { codec } = await codecFixture();
    const withData = codec.toRecord({ ...attrs, datacontenttype: 'application/json' }, new Uint8Array([0, 0, 0, 0, 1]));
    expect(withData.headers.filter(([k]) => k === 'content-type').map(([, v]) => dec.decode(v))).toEqual([AVRO_CONTENT_TYPE]);
    const tomb = codec.toRecord({ ...attrs, datacontenttype: 'application/json' }, null);
    expect(tomb.value).toBeNull();
    expect(tomb.headers.map(([k]) => k)).not.toContain('content-type');
    expect(dec.decode(tomb.key)).toBe('EUR-USD_H4');
  });

  it('round-trips an envelope with JSON data through a record', async () => {
    const { codec } = await codecFixture();
    const b = codec.binding(PRICE_LOADING_COMPLETED)!;
    const r = codec.envelopeToRecord({ attributes: attrs, data: { kind: 'json', value: data } }, b);
    const env = await codec.fromRecord(consumed(r));
    expect(env.attributes).toEqual({ ...attrs, datacontenttype: 'application/json' }); // on the wire application/avro; decoded, natural JSON
    expect(env.data).toEqual({ kind: 'json', value: { ...priceLoaded(), feed: null } });
    expect(Object.isFrozen(env)).toBe(true);
    expect(Object.isFrozen(env.attributes)).toBe(true);
  });

  it('envelopeToRecord: no data → tombstone; binary data → CEG_INVALID_DATA naming data', async () => {
    const { codec } = await codecFixture();
    const b = codec.binding(PRICE_LOADING_COMPLETED)!;
    const tomb = codec.envelopeToRecord({ attributes: attrs }, b);
    expect(tomb.value).toBeNull();
    const env = await codec.fromRecord(consumed(tomb));
    expect(env).toEqual({ attributes: attrs });
    expect(() => codec.envelopeToRecord({ attributes: attrs, data: { kind: 'binary', bytes: new Uint8Array([1]) } }, b)).toThrow(
      expect.objectContaining({ code: 'CEG_INVALID_DATA', details: { field: 'data' } }) as Error,
    );
  });

  it('reads a structured-mode record', async () => {
    const { codec } = await codecFixture();
    const json = JSON.stringify({ specversion: '1.0', id: 's1', source: 'urn:x', type: PRICE_LOADING_COMPLETED, datacontenttype: 'application/json', data: { a: 1 } });
    const env = await codec.fromRecord({ topic: 't', partition: 0, offset: 0n, timestampMs: 0, key: null, value: enc.encode(json), headers: [['content-type', enc.encode('application/cloudevents+json')]] });
    expect(env.attributes).toMatchObject({ id: 's1', type: PRICE_LOADING_COMPLETED });
    expect(env.data).toEqual({ kind: 'json', value: { a: 1 } });
  });

  it('refuses a value without the Confluent frame (CEG_NOT_REGISTRY_FRAMED, poison)', async () => {
    const { codec } = await codecFixture();
    const r = codec.toRecord(attrs, enc.encode('{"a":1}'));
    const err = await rejection(codec.fromRecord(consumed(r)));
    expect(err.code).toBe('CEG_NOT_REGISTRY_FRAMED');
    expect(err.retriable).toBe(false);
  });

  it('refuses an unknown schema id (CEG_SCHEMA_NOT_FOUND, not retriable)', async () => {
    const { codec } = await codecFixture();
    const r = codec.toRecord(attrs, new Uint8Array([0, 0, 0, 0x7f, 0x7f, 2]));
    const err = await rejection(codec.fromRecord(consumed(r)));
    expect(err.code).toBe('CEG_SCHEMA_NOT_FOUND');
    expect(err.retriable).toBe(false);
  });

  it('refuses a body the writer schema cannot decode with CEG_DECODE_FAILED naming the schema and record', async () => {
    const { codec } = await codecFixture();
    const b = codec.binding(PRICE_LOADING_COMPLETED)!;
    const framed = codec.encodeData(b, data);
    const truncated = framed.slice(0, 8);
    const err = await rejection(codec.fromRecord(consumed(codec.toRecord(attrs, truncated), 9n)));
    expect(err.code).toBe('CEG_DECODE_FAILED');
    expect(err.retriable).toBe(false);
    expect(err.details).toMatchObject({ schemaId: b.schema.id, topic: 'trading.price-loading-completed', partition: 1, offset: '9' });
  });

  it('fetches a writer schema by id once, and does not cache a failed lookup', async () => {
    const { catalog, registry, codec: warm } = await codecFixture();
    const id = warm.binding(PRICE_LOADING_COMPLETED)!.schema.id;
    let calls = 0;
    let down = true;
    const counting: SchemaRegistry = {
      ...registry,
      schemaById: (n) => {
        calls++;
        return down ? Promise.reject(new GatewayError('CEG_REGISTRY_UNAVAILABLE', 'down', { retriable: true })) : registry.schemaById(n);
      },
    };
    const cold = new EventCodec(catalog, counting, new Map());
    expect(cold.binding(PRICE_LOADING_COMPLETED)).toBeUndefined();
    const r = consumed(warm.envelopeToRecord({ attributes: attrs, data: { kind: 'json', value: data } }, warm.binding(PRICE_LOADING_COMPLETED)!));
    const err = await rejection(cold.fromRecord(r));
    expect(err.code).toBe('CEG_REGISTRY_UNAVAILABLE');
    expect(err.retriable).toBe(true);
    down = false;
    await cold.fromRecord(r);
    await cold.fromRecord(r);
    await cold.writerType(id);
    expect(calls).toBe(2);
    // Start-up bindings are pre-cached: the warm codec never asks.
    let warmCalls = 0;
    const warm2 = new EventCodec(catalog, { ...registry, schemaById: (n) => (warmCalls++, registry.schemaById(n)) }, new Map([[PRICE_LOADING_COMPLETED, warm.binding(PRICE_LOADING_COMPLETED)!.schema]]));
    await warm2.fromRecord(r);
    expect(warmCalls).toBe(0);
  });
  it('fromRecordNow decodes at once what fromRecord would once the writer schema is known, and hands anything else back (undefined)', async () => {
    const { catalog, registry, codec: warm } = await codecFixture();
    const r = consumed(warm.envelopeToRecord({ attributes: attrs, data: { kind: 'json', value: data } }, warm.binding(PRICE_LOADING_COMPLETED)!));
    expect(warm.fromRecordNow(r, 'catalog')).toEqual(await warm.fromRecord(r, 'catalog'));
    expect(warm.fromRecordNow(consumed(warm.envelopeToRecord({ attributes: attrs }, warm.binding(PRICE_LOADING_COMPLETED)!)))).toEqual({ attributes: attrs });
    // A codec that has not seen the writer schema yet: only the async path may ask the registry; after it, decoding is immediate.
    const cold = new EventCodec(catalog, registry, new Map());
    expect(cold.fromRecordNow(r, 'catalog')).toBeUndefined();
    await cold.fromRecord(r, 'catalog');
    expect(cold.fromRecordNow(r, 'catalog')).toEqual(await warm.fromRecord(r, 'catalog'));
    // Structured mode: always the async path.
    const json = JSON.stringify({ specversion: '1.0', id: 's1', source: 'urn:x', type: PRICE_LOADING_COMPLETED, datacontenttype: 'application/json', data: { a: 1 } });
    expect(warm.fromRecordNow({ topic: 't', partition: 0, offset: 0n, timestampMs: 0, key: null, value: enc.encode(json), headers: [['content-type', enc.encode('application/cloudevents+json')]] })).toBeUndefined();
    // Poison throws the same errors as fromRecord rejects with.
    expect(() => warm.fromRecordNow(consumed(warm.toRecord(attrs, enc.encode('{"a":1}'))))).toThrow(expect.objectContaining({ code: 'CEG_NOT_REGISTRY_FRAMED', retriable: false }) as Error);
    const truncated = warm.encodeData(warm.binding(PRICE_LOADING_COMPLETED)!, data).slice(0, 8);
    expect(() => warm.fromRecordNow(consumed(warm.toRecord(attrs, truncated), 9n))).toThrow(expect.objectContaining({ code: 'CEG_DECODE_FAILED' }) as Error);
  });
});
