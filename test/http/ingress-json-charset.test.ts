/**
 * A JSON media type declaring a charset other than UTF-8 is refused in every content mode (in-memory
 * gateway), since JSON is read and forwarded as UTF-8: binary mode answers 415 as structured and
 * batch mode do for their own media type (it stored "é" where the sender meant "Ã©"); a JSON
 * `datacontenttype` attribute with such a charset is a 400 naming it. Nothing is stored. A charset
 * that is a superset of US-ASCII (ISO-8859-x, windows-125x, latin1) is accepted for all-ASCII
 * content, which reads the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

const binary = (contentType: string): Record<string, string> => ({ 'ce-specversion': '1.0', 'ce-id': `cs-${contentType}`, 'ce-source': 'urn:partner:test', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z', 'content-type': contentType });
const body = JSON.stringify({ ...priceLoaded(), barKey: 'é' });

describe('a JSON media type with a charset other than UTF-8', () => {
  it.each(['application/json; charset=iso-8859-1', 'application/json;charset="ISO-8859-1"', 'text/json; charset=windows-1252', 'application/vnd.x+json; charset=utf-16'])('binary mode %s: 415, nothing stored', async (ct) => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: binary(ct), body: Buffer.from(body) });
    const json = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(json)).toBe(415);
    expect(json).toMatchObject({ code: 'CEG_UNSUPPORTED_MEDIA_TYPE', contentType: ct });
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it.each(['application/json; charset=utf-8', 'application/json; charset="UTF-8"', 'application/json'])('binary mode %s: 202', async (ct) => {
    const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: binary(ct), body: Buffer.from(body) });
    expect(res.status).toBe(202);
  });

  it.each(['application/json; charset=iso-8859-1', 'text/json; charset=windows-1252', 'application/json; charset=Latin1'])('binary mode %s with an all-ASCII body: 202 (it reads the same as UTF-8)', async (ct) => {
    const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { ...binary(ct), 'ce-id': `cs-ascii-${ct}` }, body: Buffer.from(JSON.stringify(priceLoaded())) });
    expect(res.status, await res.text()).toBe(202);
  });

  it('structured and batch mode: a JSON datacontenttype with charset=iso-8859-1 and all-ASCII data is accepted (data and data_base64)', async () => {
    const asData = structuredPriceEvent({ id: 'cs-ascii-data', datacontenttype: 'application/json; charset=iso-8859-1' });
    const { data, ...rest } = structuredPriceEvent({ id: 'cs-ascii-b64', datacontenttype: 'text/json; charset=latin1' });
    const asBase64 = { ...rest, data_base64: Buffer.from(JSON.stringify(data)).toString('base64') };
    for (const [ev, ct] of [[asData, undefined], [asBase64, undefined]] as const) {
      const r = await post(gw.url, ev, ct);
      expect(r.status, JSON.stringify(r.body)).toBe(202);
    }
  });

  it('structured and batch mode: a JSON datacontenttype with charset=iso-8859-1 and non-ASCII data is a 400 naming datacontenttype (data and data_base64)', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const asData = structuredPriceEvent({ id: 'cs-data', datacontenttype: 'application/json; charset=iso-8859-1' }, { ...priceLoaded(), barKey: 'é' });
    const { data, ...rest } = structuredPriceEvent({ id: 'cs-b64', datacontenttype: 'text/json; charset=latin1' }, { ...priceLoaded(), barKey: 'é' });
    const asBase64 = { ...rest, data_base64: Buffer.from(JSON.stringify(data)).toString('base64') };
    for (const [ev, ct] of [[asData, undefined], [asBase64, undefined], [[asData, asBase64], BATCH]] as const) {
      const r = await post(gw.url, ev, ct);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.code).toBe('CEG_INVALID_ATTRIBUTE');
      expect(r.body.violations).toEqual(Array.isArray(ev) ? [expect.objectContaining({ attribute: 'datacontenttype', index: 0 }), expect.objectContaining({ attribute: 'datacontenttype', index: 1 })] : [expect.objectContaining({ attribute: 'datacontenttype', reason: expect.stringContaining('is UTF-8') as string })]);
    }
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });
});
