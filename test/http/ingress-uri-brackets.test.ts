/**
 * A `source` with a misplaced or unbalanced bracket (`http://[::1`, `http://a]b/`) was stored
 * and delivered unchanged, although the gateway's own error text says source "must be an RFC
 * 3986 URI-reference": RFC 3986 §3.2.2 allows `[` and `]` only around an IP-literal host. Now
 * 400 CEG_INVALID_ATTRIBUTE naming `source`, in structured and binary mode; a valid IP-literal
 * host still passes (in-memory gateway).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { findEvent, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

interface Refusal {
  code?: string;
  violations?: { attribute?: string; reason: string; code?: string }[];
}

describe('POST /events: source with brackets (RFC 3986 §3.2.2)', () => {
  for (const source of ['http://[::1', 'http://a]b/', 'urn:x[1]', 'http://h/p?a[]=1']) {
    it(`${source}: 400 CEG_INVALID_ATTRIBUTE naming source, structured and binary, nothing stored`, async () => {
      const before = await recordCount(gw.gateway, PRICE_TOPIC);
      const structured = await post(gw.url, structuredPriceEvent({ source }));
      const binary = await post(gw.url, priceLoaded(), 'application/json', { 'ce-specversion': '1.0', 'ce-id': `b-${Date.now()}`, 'ce-source': source, 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z' });
      for (const r of [structured, binary]) {
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        const body = r.body as Refusal;
        expect(body.code).toBe('CEG_INVALID_ATTRIBUTE');
        expect(body.violations).toEqual([expect.objectContaining({ attribute: 'source', reason: expect.stringContaining('RFC 3986 URI-reference') as string })]);
      }
      expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
    });
  }

  it('a bracketed IPv6 host is accepted and kept as sent', async () => {
    const ev = structuredPriceEvent({ source: 'http://[::1]:8080/x' });
    const r = await post(gw.url, ev);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const found = await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, ev.id as string);
    expect(found?.env.attributes.source).toBe('http://[::1]:8080/x');
  });
});
