/**
 * DESIGN "The envelope": data is validated against the schema version a partner names in
 * `dataschema` when it is a registered version of the kind, otherwise against the latest.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadCatalog, registerCatalog } from '../../src/catalog/index.js';
import { EventCodec } from '../../src/codec/event/index.js';
import { normaliseUri, prepareEvents } from '../../src/http/ingress/prepare.js';
import { createMemoryRegistry } from '../../src/registry/index.js';
import { GatewayError } from '../../src/core/errors.js';
import type { Envelope } from '../../src/envelope/types.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../fixtures/events.js';

const BASE = 'http://gw.example/schemas/ids/';

async function twoVersions(): Promise<{ codec: EventCodec; v1: number; v2: number }> {
  const catalog = loadCatalog();
  const kind = catalog.byEventId(PRICE_LOADING_COMPLETED)!;
  const registry = createMemoryRegistry();
  // Version 1: the kind's schema without its last optional field (`feed`), as it was before.
  const current = JSON.parse(kind.schema) as { fields: { name: string }[] };
  const older = { ...current, fields: current.fields.filter((f) => f.name !== 'feed') };
  await registry.setCompatibility(kind.subject, kind.compatibility);
  const first = await registry.register(kind.subject, JSON.stringify(older));
  const latest = await registerCatalog(registry, catalog);
  const codec = new EventCodec(catalog, registry, latest);
  await codec.loadVersions();
  return { codec, v1: first.id, v2: latest.get(PRICE_LOADING_COMPLETED)!.id };
}

function event(dataschema: string | undefined, data: Record<string, unknown>): Envelope {
  return {
    attributes: { specversion: '1.0', id: 'e-1', source: 'urn:p', type: PRICE_LOADING_COMPLETED, time: '2022-03-15T12:00:00Z', ...(dataschema ? { dataschema } : {}) },
    data: { kind: 'json', value: data as never },
  };
}

function header(headers: readonly (readonly [string, Uint8Array])[], name: string): string | undefined {
  const h = headers.find(([n]) => n === name);
  return h && new TextDecoder().decode(h[1]);
}

describe('dataschema names the version', () => {
  it('writes with the version the partner names, and with the latest when it names none or a foreign one', async () => {
    const { codec, v1, v2 } = await twoVersions();
    expect(v1).not.toBe(v2);
    const [named] = prepareEvents([event(`${BASE}${v1}`, priceLoaded())], codec, { dataschemaBase: BASE }, false);
    expect(Buffer.from(named!.record.value!).readUInt32BE(1)).toBe(v1);
    expect(header(named!.record.headers, 'ce_schemaversion')).toBe('1');
    expect(header(named!.record.headers, 'ce_dataschema')).toBe(`${BASE}${v1}`);

    for (const ds of [undefined, 'https://partner.example/schemas/price.avsc']) {
      const [latest] = prepareEvents([event(ds, priceLoaded())], codec, { dataschemaBase: BASE }, false);
      expect(Buffer.from(latest!.record.value!).readUInt32BE(1)).toBe(v2);
      expect(header(latest!.record.headers, 'ce_schemaversion')).toBe('2');
    }
  });

  it('validates against the named version: a field only the latest has is unknown there', async () => {
    const { codec, v1 } = await twoVersions();
    const data = { ...priceLoaded(), feed: 'refinitiv' };
    expect(prepareEvents([event(undefined, data)], codec, { dataschemaBase: BASE }, false)).toHaveLength(1);
    let err: unknown;
    try {
      prepareEvents([event(`${BASE}${v1}`, data)], codec, { dataschemaBase: BASE }, false);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).details.violations).toEqual([expect.objectContaining({ field: '/data/feed' })]);
  });

  it('refuses a dataschema of ours that is not a version of the kind', async () => {
    const { codec } = await twoVersions();
    let err: unknown;
    try {
      prepareEvents([event(`${BASE}99999`, priceLoaded())], codec, { dataschemaBase: BASE }, false);
    } catch (e) {
      err = e;
    }
    expect((err as GatewayError).details.violations).toEqual([expect.objectContaining({ attribute: 'dataschema' })]);
  });
});

/** `text` with the case of each letter chosen by `flips` (cycled). */
function recase(text: string, flips: readonly boolean[]): string {
  return [...text].map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c.toLowerCase())).join('');
}

describe('dataschema is compared as a URI (RFC 3986 §3.1, §6.2.2.1, §6.2.3)', () => {
  const thrown = (f: () => unknown): GatewayError | undefined => {
    try {
      f();
    } catch (e) {
      return e as GatewayError;
    }
    return undefined;
  };

  it('scheme and host in any case, and a written default port, name the same schema: the version is selected, an unknown id refused', async () => {
    const { codec, v1 } = await twoVersions();
    for (const base of ['HTTP://gw.example/schemas/ids/', 'Http://GW.Example/schemas/ids/', 'http://gw.example:80/schemas/ids/', 'HTTP://GW.EXAMPLE:/schemas/ids/']) {
      const [named] = prepareEvents([event(`${base}${v1}`, priceLoaded())], codec, { dataschemaBase: BASE }, false);
      expect(Buffer.from(named!.record.value!).readUInt32BE(1), base).toBe(v1);
      expect(header(named!.record.headers, 'ce_dataschema')).toBe(`${BASE}${v1}`);
      const err = thrown(() => prepareEvents([event(`${base}999`, priceLoaded())], codec, { dataschemaBase: BASE }, false));
      expect(err, base).toBeInstanceOf(GatewayError);
      expect(err!.details.violations).toEqual([expect.objectContaining({ attribute: 'dataschema' })]);
    }
  });

  it('the path is case-sensitive: another case of it is a foreign URI (replaced by the latest)', async () => {
    const { codec, v2 } = await twoVersions();
    const [latest] = prepareEvents([event('http://gw.example/SCHEMAS/IDS/999', priceLoaded())], codec, { dataschemaBase: BASE }, false);
    expect(Buffer.from(latest!.record.value!).readUInt32BE(1)).toBe(v2);
  });

  it('property: any case of the scheme and host of the base selects the named version', async () => {
    const { codec, v1 } = await twoVersions();
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 20 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 20 }), (a, b) => {
        const named = `${recase('http', a)}://${recase('gw.example', b)}/schemas/ids/${v1}`;
        const [p] = prepareEvents([event(named, priceLoaded())], codec, { dataschemaBase: BASE }, false);
        expect(Buffer.from(p!.record.value!).readUInt32BE(1)).toBe(v1);
      }),
      { numRuns: 50 },
    );
  });

  it('normaliseUri: case of scheme, host and %-hex folded, default port dropped; user information, path and query kept', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true }), fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }), (url, flips) => {
        const m = /^([a-z]+):\/\/([^/?#]*)(.*)$/s.exec(url)!;
        const shouted = `${recase(m[1]!, flips)}://${recase(m[2]!, flips)}${m[3]!}`;
        const n = normaliseUri(shouted);
        expect(n).toBe(normaliseUri(url));
        expect(n.endsWith(m[3]!.replace(/%[0-9a-f]{2}/gi, (e) => e.toUpperCase()))).toBe(true);
      }),
    );
    expect(normaliseUri('HTTPS://Gw.Example:443/A%2fb?Q=%7e')).toBe('https://gw.example/A%2Fb?Q=%7E');
    expect(normaliseUri('http://User:Pw@[::1]:8080/x')).toBe('http://User:Pw@[::1]:8080/x');
    expect(normaliseUri('urn:ce:X')).toBe('urn:ce:X');
  });
});
