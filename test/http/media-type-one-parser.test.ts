/**
 * One media-type parser (src/envelope/media-type.ts, RFC 9110 §8.3.1) answers for every place a
 * media type is read, so the same text gets the same answer everywhere: the ingress Content-Type,
 * the `datacontenttype` attribute, the management API's Content-Type and a Kafka record's
 * `content-type`. Break report 2026-12-06: a quoted value holding `;` read as malformed; a
 * parameter given twice refused at the ingress but last-wins at the management API and on Kafka;
 * `;;` refused as datacontenttype while `;` was accepted; a Content-Type list taken as structured
 * mode; `application/+json` taken as JSON. In-memory gateway (no Kafka).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromRecord } from '../../src/codec/kafka/index.js';
import { GatewayError } from '../../src/core/errors.js';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { STRUCTURED, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

const enc = new TextEncoder();

/** A name in random letter case (parameter names are case-insensitive, RFC 9110 §8.3.1). */
const anyCase = (name: string): fc.Arbitrary<string> => fc.array(fc.boolean(), { minLength: name.length, maxLength: name.length }).map((up) => [...name].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(''));
/** A quoted-string (RFC 9110 §5.6.4) whose content may hold `;`, `,`, `=`, `\"`, `\\` and spaces. */
const quoted = fc.array(fc.constantFrom('a', 'Z', '9', ';', ',', '=', '/', ' ', '\\"', '\\\\', '\\a'), { maxLength: 8 }).map((cs) => `"${cs.join('')}"`);
/** UTF-8, as a token or quoted, any case: every place reads JSON text as UTF-8, so only a repeat refuses. */
const utf8 = fc.constantFrom('utf-8', 'UTF-8', '"utf-8"', '"UTF-8"', 'utf8');
const param = fc.oneof(
  fc.tuple(anyCase('charset'), utf8).map(([n, v]) => ({ name: 'charset', text: `${n}=${v}` })),
  fc.tuple(fc.constantFrom('profile', 'x-level'), quoted).chain(([n, v]) => anyCase(n).map((c) => ({ name: n, text: `${c}=${v}` }))),
  fc.tuple(fc.constantFrom('profile', 'x-level'), fc.constantFrom('1', 'abc', 'a.b')).chain(([n, v]) => anyCase(n).map((c) => ({ name: n, text: `${c}=${v}` }))),
  // An empty parameter (`;;`, a trailing `;`): allowed by RFC 9110 §8.3.1's grammar.
  fc.constant({ name: '', text: '' }),
);
// Spaces only: a tab is OWS to the parser, but a CloudEvents String (datacontenttype) excludes control characters.
const ows = fc.constantFrom('', ' ', '  ');
/** `; p1; p2…` with OWS around each `;`, and whether a parameter name occurs twice (case-insensitively). */
const params = fc.array(fc.tuple(ows, ows, param), { maxLength: 4 }).map((ps) => {
  const names = ps.map(([, , p]) => p.name).filter((n) => n !== '');
  return { text: ps.map(([a, b, p]) => `${a};${b}${p.text}`).join(''), repeated: new Set(names).size !== names.length };
});

async function ingressAccepts(contentType: string): Promise<boolean> {
  const r = await post(gw.url, structuredPriceEvent(), contentType);
  if (r.status !== 202) expect(r.status, JSON.stringify(r.body)).toBe(415);
  return r.status === 202;
}

async function attributeAccepts(datacontenttype: string): Promise<boolean> {
  const r = await post(gw.url, structuredPriceEvent({ datacontenttype }), STRUCTURED);
  if (r.status !== 202) {
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect((r.body.violations as { attribute?: string }[])[0]?.attribute).toBe('datacontenttype');
  }
  return r.status === 202;
}

/** The management API: anything but 415 took the Content-Type (the body `{}` then fails on its fields). */
async function managementAccepts(contentType: string): Promise<boolean> {
  const res = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': contentType }, body: '{}' });
  const body = (await res.json()) as { code?: string };
  if (res.status === 415) {
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(body.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
  }
  return res.status !== 415;
}

/** A Kafka binary-mode record with this `content-type`: read, or poison naming datacontenttype. */
function kafkaAccepts(contentType: string): boolean {
  const headers = [['ce_specversion', '1.0'], ['ce_id', 'k1'], ['ce_source', 'urn:x'], ['ce_type', 'k'], ['content-type', contentType]].map(([k, v]) => [k!, enc.encode(v)] as const);
  try {
    fromRecord({ topic: 't', partition: 0, offset: 0n, timestampMs: 0, key: null, value: enc.encode('{}'), headers });
    return true;
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    expect((e as GatewayError).code).toBe('CEG_INVALID_EVENT');
    expect((e as GatewayError).details?.attribute).toBe('datacontenttype');
    return false;
  }
}

describe('one media-type parser', () => {
  it('the ingress Content-Type, datacontenttype, the management API and a Kafka content-type agree: accepted unless a parameter repeats', async () => {
    await fc.assert(
      fc.asyncProperty(params, async ({ text, repeated }) => {
        const answers = {
          ingress: await ingressAccepts(`${STRUCTURED}${text}`),
          datacontenttype: await attributeAccepts(`application/json${text}`),
          management: await managementAccepts(`application/json${text}`),
          kafka: kafkaAccepts(`application/json${text}`),
        };
        expect(answers, text).toEqual({ ingress: !repeated, datacontenttype: !repeated, management: !repeated, kafka: !repeated });
      }),
      { numRuns: 60 },
    );
  });

  it('a quoted value holding `;`, `,` or a quoted-pair is one value (RFC 9110 §5.6.4): 202, at the ingress and as datacontenttype', async () => {
    for (const p of ['; profile="a;b"', '; profile="a,b"; charset=utf-8', '; profile="a\\";b"', '; charset="UTF-8"']) {
      expect((await post(gw.url, structuredPriceEvent({ datacontenttype: `application/json${p}` }), `${STRUCTURED}${p}`)).status, p).toBe(202);
      const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'ce-specversion': '1.0', 'ce-id': 'q-1', 'ce-source': 'urn:partner:test', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z', 'content-type': `application/json${p}` }, body: JSON.stringify(priceLoaded()) });
      expect(res.status, p).toBe(202);
    }
  });

  it('a parameter given twice at the management API: 415 application/problem+json naming Content-Type', async () => {
    const res = await fetch(`${gw.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json; charset=latin1; charset=utf-8' }, body: '{}' });
    expect(res.status).toBe(415);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as { code?: string; detail?: string };
    expect(body.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    expect(body.detail).toMatch(/Content-Type has the parameter charset more than once/);
  });

  it('empty parameters: `;;` and a trailing `;` are accepted alike, as Content-Type and as datacontenttype', async () => {
    for (const p of [';', ';;charset=utf-8', '; ;charset=utf-8;']) {
      expect((await post(gw.url, structuredPriceEvent({ datacontenttype: `application/json${p}` }), `${STRUCTURED}${p}`)).status, p).toBe(202);
    }
  });

  it('a Content-Type list is not one media type: 415 at the ingress, 400 as datacontenttype', async () => {
    const list = await post(gw.url, structuredPriceEvent(), `${STRUCTURED}; q=1, text/plain`);
    expect(list.status).toBe(415);
    expect(list.body.code).toBe('CEG_UNSUPPORTED_MEDIA_TYPE');
    expect(String(list.body.detail)).toMatch(/list of media types/);
    const attr = await post(gw.url, structuredPriceEvent({ datacontenttype: 'application/json, text/plain' }), STRUCTURED);
    expect(attr.status).toBe(400);
  });

  it('application/+json is not JSON (a +json suffix follows a subtype name, RFC 6838 §4.2.8): its data is not read as JSON', async () => {
    const r = await post(gw.url, structuredPriceEvent({ datacontenttype: 'application/+json' }), STRUCTURED);
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toMatch(/non-JSON datacontenttype/);
  });
});
