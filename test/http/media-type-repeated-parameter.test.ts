/**
 * A media-type parameter given twice (`charset=latin1; charset=utf-8`) is refused wherever a media
 * type is read — the binary-mode Content-Type, the structured Content-Type, the `datacontenttype`
 * attribute — in either order, naming where: receivers would disagree on its value (RFC 6838 §4.3:
 * a parameter given more than once is an error). It was "last one wins" (202 in one order, 415 in
 * the other: break report 2026-12-06). On the in-memory gateway.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

const charsets = fc.constantFrom('utf-8', 'UTF-8', 'utf8', '"utf-8"', 'latin1', 'us-ascii');
const name = fc.constantFrom('charset', 'Charset', 'CHARSET');

async function post(headers: Record<string, string>, body: string): Promise<{ status: number; type: string; body: { code?: string; violations?: { field?: string; attribute?: string }[] } }> {
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers, body });
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: (await res.json()) as never };
}

describe('a media-type parameter given twice', () => {
  it('is refused in the binary Content-Type, the structured Content-Type and datacontenttype, whatever the order and case', async () => {
    await fc.assert(
      fc.asyncProperty(charsets, charsets, name, name, async (first, second, n1, n2) => {
        const params = `; ${n1}=${first}; ${n2}=${second}`;
        const binary = await post({ 'content-type': `application/json${params}`, 'ce-specversion': '1.0', 'ce-id': 'dup-param', 'ce-source': 'urn:partner:test', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z' }, JSON.stringify(priceLoaded('EUR/USD', 'H4')));
        const structured = await post({ 'content-type': `application/cloudevents+json${params}` }, JSON.stringify(structuredPriceEvent()));
        const attribute = await post({ 'content-type': 'application/cloudevents+json' }, JSON.stringify(structuredPriceEvent({ datacontenttype: `application/json${params}` })));
        for (const r of [binary, structured, attribute]) {
          expect([400, 415]).toContain(r.status);
          expect(r.type).toMatch(/^application\/problem\+json/);
        }
        expect(attribute.body.violations?.[0]?.attribute).toBe('datacontenttype');
      }),
      { numRuns: 25 },
    );
  });

  it('one charset parameter, as before, is taken', async () => {
    const r = await post({ 'content-type': 'application/cloudevents+json; charset=utf-8' }, JSON.stringify(structuredPriceEvent({ datacontenttype: 'application/json; charset=utf-8' })));
    expect(r.status).toBe(202);
  });
});
