/**
 * DESIGN "The envelope": data is validated against the schema version a partner names in
 * `dataschema` when it is a registered version of the kind, otherwise against the latest.
 */
import { describe, expect, it } from 'vitest';
import { loadCatalog, registerCatalog } from '../../src/catalog/index.js';
import { EventCodec } from '../../src/codec/event/index.js';
import { prepareEvents } from '../../src/http/ingress/prepare.js';
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
