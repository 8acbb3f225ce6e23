/**
 * A media type with a parameter given twice (RFC 6838 §4.3: an error) is refused wherever the
 * ingress reads one, whatever the parameter, its case and the order of the values: the
 * Content-Type of structured, batch and binary mode (415 CEG_UNSUPPORTED_MEDIA_TYPE naming it in
 * `detail`, with `contentType`) and the `datacontenttype` attribute in structured and batch mode (400
 * CEG_INVALID_ATTRIBUTE naming it). Before, the last one won: `charset=latin1; charset=utf-8`
 * was accepted and `charset=utf-8; charset=latin1` refused, and receivers that keep the first
 * would read the accepted one as Latin-1. Nothing is stored. In-memory gateway.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isMediaTypeFault, readMediaType } from '../../src/envelope/index.js';

/** The parameter given twice in `text` (lowercased), as the envelope's one media-type parser reports it. */
function repeatedMediaParameter(text: string): string | undefined {
  const read = readMediaType(text);
  return isMediaTypeFault(read) && read.fault === 'repeated' ? read.name : undefined;
}
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, STRUCTURED, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

const names = ['charset', 'profile', 'x-level', 'q'];
/** A name in random letter case (parameter names are case-insensitive, RFC 9110 §8.3.1). */
const anyCase = (name: string): fc.Arbitrary<string> => fc.array(fc.boolean(), { minLength: name.length, maxLength: name.length }).map((up) => [...name].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(''));
// (A `;` inside a quoted value: test/http/media-type-one-parser.test.ts.)
const value = fc.constantFrom('utf-8', 'UTF-8', '"utf-8"', 'latin1', 'iso-8859-1', '"a b"', 'x');
/** `params` with one name given twice, in any case, possibly spaced, with other parameters around it. */
const repeatedParams = fc
  .record({ name: fc.constantFrom(...names), other: fc.subarray(names, { maxLength: 2 }), v1: value, v2: value, space: fc.constantFrom('', ' ', '  ') })
  .chain(({ name, other, v1, v2, space }) =>
    fc.tuple(anyCase(name), anyCase(name)).map(([a, b]) => {
      const rest = other.filter((o) => o !== name).map((o) => `;${space}${o}=1`);
      return [`;${space}${a}=${v1}`, ...rest, `;${space}${b}=${v2}`].join('');
    }),
  );

const binaryHeaders = (ct: string, id: string): Record<string, string> => ({ 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': 'urn:partner:test', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z', 'content-type': ct });

describe('a media type parameter given twice (RFC 6838 §4.3)', () => {
  it('the parser names it, case-insensitively, skipping quoted values', () => {
    expect(repeatedMediaParameter('application/json; charset=latin1; CharSet=utf-8')).toBe('charset');
    expect(repeatedMediaParameter('application/json; a="x;a=1"')).toBeUndefined();
    expect(repeatedMediaParameter('application/json; a="x\\";a=1"; b=2')).toBeUndefined();
    expect(repeatedMediaParameter('application/json; charset=utf-8; profile=x')).toBeUndefined();
    expect(repeatedMediaParameter('application/json')).toBeUndefined();
  });

  it('the Content-Type header in structured, batch and binary mode: 415 naming Content-Type, whatever the order; nothing stored', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    await fc.assert(
      fc.asyncProperty(repeatedParams, async (params) => {
        const structured = await post(gw.url, structuredPriceEvent(), `${STRUCTURED}${params}`);
        const batch = await post(gw.url, [structuredPriceEvent()], `${BATCH}${params}`);
        const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: binaryHeaders(`application/json${params}`, `mp-${params}`), body: JSON.stringify(priceLoaded()) });
        const binary = { status: res.status, body: (await res.json()) as Record<string, unknown> };
        for (const [r, ct] of [[structured, STRUCTURED], [batch, BATCH], [binary, 'application/json']] as const) {
          expect(r.status, JSON.stringify(r.body)).toBe(415);
          expect(r.body).toMatchObject({ code: 'CEG_UNSUPPORTED_MEDIA_TYPE', contentType: `${ct}${params}` });
          expect(String(r.body.detail)).toMatch(/Content-Type has the parameter \S+ more than once/);
        }
      }),
      { numRuns: 25 },
    );
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('the datacontenttype attribute in structured and batch mode: 400 CEG_INVALID_ATTRIBUTE naming datacontenttype; nothing stored', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    await fc.assert(
      fc.asyncProperty(repeatedParams, async (params) => {
        const ev = structuredPriceEvent({ datacontenttype: `application/json${params}` });
        for (const [body, ct] of [[ev, STRUCTURED], [[ev], BATCH]] as const) {
          const r = await post(gw.url, body, ct);
          expect(r.status, JSON.stringify(r.body)).toBe(400);
          expect(r.body.code).toBe('CEG_INVALID_ATTRIBUTE');
          expect(r.body.violations).toEqual([expect.objectContaining({ attribute: 'datacontenttype', reason: expect.stringMatching(/more than once/) as string })]);
        }
      }),
      { numRuns: 25 },
    );
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('each parameter once is still accepted (charset=utf-8 with another parameter)', async () => {
    const r = await post(gw.url, structuredPriceEvent({ datacontenttype: 'application/json; charset=utf-8; profile=x' }), `${STRUCTURED}; charset=utf-8; profile=y`);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
  });
});
