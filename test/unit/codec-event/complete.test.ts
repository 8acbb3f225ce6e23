/**
 * The one place that completes an outbound event (codec/event completeOutbound): the bus publisher,
 * the outbox writer and HTTP ingress fill the same gateway attributes the same way, and the kind's
 * size bound and the attribute limits are checked on the event as written.
 */
import { describe, expect, it } from 'vitest';
import { prepareEvent } from '../../../src/bus/publisher/index.js';
import { completeOutbound } from '../../../src/codec/event/index.js';
import { checkEnvelopeLimits } from '../../../src/envelope/index.js';
import type { Attributes, JsonValue } from '../../../src/envelope/types.js';
import { prepareEvents } from '../../../src/http/ingress/prepare.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../../fixtures/events.js';
import { codecFixture } from '../bus/helpers.js';
import { caught } from '../../helpers/errors.js';

const BASE = 'http://gw.example/schemas/ids/';
const GATEWAY_FILLED = ['datacontenttype', 'eventname', 'eventclass', 'schemaversion', 'dataschema', 'partitionkey'] as const;

describe('completeOutbound', () => {
  it('the publisher (and so the outbox writer) and HTTP ingress fill the gateway attributes alike', async () => {
    const { codec } = await codecFixture();
    const data = priceLoaded() as unknown as JsonValue;
    const published = prepareEvent(codec, { service: 's', instance: 'i', dataschemaBase: BASE }, 'PriceLoadingCompleted', data)!;
    const partner: Attributes = { specversion: '1.0', id: 'p-1', source: 'urn:partner', type: PRICE_LOADING_COMPLETED, time: '2022-03-15T12:00:02Z', eventname: 'Spoofed', schemaversion: 99 };
    const [ingress] = prepareEvents([{ attributes: partner, data: { kind: 'json', value: data } }], codec, { dataschemaBase: BASE }, false);
    const header = (name: string): string | undefined => {
      const h = ingress!.record.headers.find(([n]) => n === (name === 'datacontenttype' ? 'content-type' : `ce_${name}`));
      return h === undefined ? undefined : Buffer.from(h[1]).toString();
    };
    for (const name of GATEWAY_FILLED) expect({ name, value: header(name) }).toEqual({ name, value: String(published.attributes[name]) });
    // Every header of the partner's completed event is one a published event has too.
    expect(published.record.headers.map(([n]) => n)).toEqual(expect.arrayContaining(ingress!.record.headers.map(([n]) => n)));
  });

  it('the kind’s size bound counts the attributes: small data with large attributes is refused, naming both parts', async () => {
    const { codec } = await codecFixture();
    const binding = codec.binding(PRICE_LOADING_COMPLETED)!;
    const value = codec.encodeData(binding, priceLoaded());
    const a: Attributes = { specversion: '1.0', id: 'x', source: 'urn:x', type: PRICE_LOADING_COMPLETED, note: 'n'.repeat(900) };
    const err = caught(() => completeOutbound(codec, a, { binding, value, partitionkey: 'EUR-USD_H4', dataschemaBase: BASE }));
    expect(err.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(err.message).toMatch(/bytes of data \(Avro\) \+ \d+ bytes of attributes = \d+ > 1024 bytes/);
    expect(err.details).toMatchObject({ limit: 'maxDataBytes', max: 1024 });
  });

  it('checks the attribute limits on the record headers as a consumer counts them, the gateway’s own attributes included', async () => {
    const { codec } = await codecFixture();
    const binding = codec.binding(PRICE_LOADING_COMPLETED)!;
    const value = codec.encodeData(binding, priceLoaded());
    const a: Record<string, string> = { specversion: '1.0', id: 'x', source: 'urn:x', type: PRICE_LOADING_COMPLETED };
    for (let i = 0; i < 8; i++) a[`x${i}`] = 'v';
    const limits = { maxAttributes: 15, maxAttributeBytes: 16_384 }; // 12 from the sender + 6 filled > 15
    const err = caught(() => completeOutbound(codec, a as unknown as Attributes, { binding, value, partitionkey: 'EUR-USD_H4', dataschemaBase: BASE, limits }));
    expect(err.code).toBe('CEG_TOO_MANY_ATTRIBUTES');
    expect(err.details).toMatchObject({ limit: 'maxAttributes', max: 15 });
    const ok = completeOutbound(codec, a as unknown as Attributes, { binding, value, partitionkey: 'EUR-USD_H4', dataschemaBase: BASE, limits: { ...limits, maxAttributes: 30 } });
    expect(checkEnvelopeLimits(ok.record.headers, { ...limits, maxAttributes: 30 })).toBeUndefined();
  });
});
