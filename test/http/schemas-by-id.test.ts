/**
 * `GET /schemas/ids/{id}` behind partner authentication (SCHEMAS_AUTH=partner), on the
 * stack's real registry — a registry shared with other subjects: without a key it is 401; a
 * partner reads the versions of the subjects of kinds it may publish or subscribe to, and any other
 * id (another team's subject, an internal kind it does not name) is the same 404 as an id the
 * registry lacks; a version registered after the gateway started is found; an admin reads any id.
 * SCHEMAS_AUTH=public (the default: issue 11 keeps `dataschema` links readable) serves every id without a key.
 * Before, the route was public: anyone could count through the ids and read every schema.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { INTERNAL_KIND, partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';
import { stackEnv } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { PRICE_LOADING_COMPLETED } from '../fixtures/events.js';

let setup: PartnersSetup;
let gw: TestGateway;
const prefix = `schemaids${randomBytes(4).toString('hex')}`;
const registry = stackEnv().schemaRegistryUrl;

/** Registers `schema` under `subject` straight in the registry (as another team would); its id. */
async function register(subject: string, schema: object): Promise<number> {
  const res = await fetch(`${registry}/subjects/${encodeURIComponent(subject)}/versions`, { method: 'POST', headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify({ schema: JSON.stringify(schema) }) });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { id: number }).id;
}

const get = async (url: string, id: number, key?: string): Promise<{ status: number; body: Record<string, unknown> | string }> => {
  const res = await fetch(`${url}/schemas/ids/${id}`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') === true ? (JSON.parse(text) as Record<string, unknown>) : text };
};

beforeAll(async () => {
  setup = partnersSetup(prefix);
  process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
  gw = await startGateway({ stack: true, env: { ...setup.env, SCHEMAS_AUTH: 'partner' } });
});
afterAll(async () => {
  await gw?.close();
  setup?.cleanup();
});

describe('GET /schemas/ids/{id} for partners', () => {
  it('without a key: 401', async () => {
    const id = gw.gateway.codec().binding(PRICE_LOADING_COMPLETED)!.schema.id;
    expect((await get(gw.url, id)).status).toBe(401);
  });

  it('a partner reads the schemas of kinds it may publish or subscribe to; another subject, an internal kind it does not name, or a kind outside its grants is the 404 of an unknown id', async () => {
    const codec = gw.gateway.codec();
    const price = codec.binding(PRICE_LOADING_COMPLETED)!;
    const internal = codec.binding(INTERNAL_KIND)!;
    const foreign = await register(`${prefix}-foreign-value`, { type: 'record', name: `Foreign${prefix}`, fields: [{ name: 'payroll', type: 'string' }] });
    // acme: publishes prices, subscribes to "*" (every kind but internal ones).
    expect(await get(gw.url, price.schema.id, setup.keys.acme)).toEqual({ status: 200, body: JSON.parse(price.kind.schema) as object });
    const unknown = await get(gw.url, 2_000_000_000, setup.keys.acme);
    expect(unknown).toMatchObject({ status: 404, body: { code: 'CEG_NOT_FOUND', detail: 'no schema with id 2000000000' } });
    for (const id of [foreign, internal.schema.id]) {
      const r = await get(gw.url, id, setup.keys.acme);
      expect(r, `id ${id}`).toMatchObject({ status: 404, body: { code: 'CEG_NOT_FOUND', detail: `no schema with id ${id}`, violations: [{ field: 'id' }] } });
    }
    // globex: publishes StrategySignal and the internal kind, subscribes to prices only.
    expect((await get(gw.url, internal.schema.id, setup.keys.globex)).status).toBe(200);
    expect((await get(gw.url, price.schema.id, setup.keys.globex)).status).toBe(200);
    const outside = gw.gateway.catalog.kinds.find((k) => !k.internal && k.name !== 'StrategySignal' && k.eventId !== PRICE_LOADING_COMPLETED)!;
    expect((await get(gw.url, codec.binding(outside.eventId)!.schema.id, setup.keys.globex)).status).toBe(404);
    expect((await get(gw.url, foreign, setup.keys.globex)).status).toBe(404);
    // ops: an admin reads any id of the registry.
    expect((await get(gw.url, foreign, setup.keys.ops)).status).toBe(200);
    expect((await get(gw.url, internal.schema.id, setup.keys.ops)).status).toBe(200);
  });

  it('a version registered after the gateway started (another instance rolling out) is found', async () => {
    const price = gw.gateway.codec().binding(PRICE_LOADING_COMPLETED)!;
    expect((await get(gw.url, price.schema.id, setup.keys.acme)).status).toBe(200); // the subject's versions are known now
    const next = JSON.parse(price.kind.schema) as { fields: object[] };
    const id = await register(price.kind.subject, { ...next, fields: [...next.fields, { name: `extra${prefix}`, type: ['null', 'string'], default: null }] });
    expect(id).not.toBe(price.schema.id);
    await waitFor('the new version to be served', async () => (await get(gw.url, id, setup.keys.acme)).status === 200, 10_000, 200);
  });

  it('by default (SCHEMAS_AUTH=public, issue 11: dataschema links stay readable): every id without a key', async () => {
    const open = await startGateway({ stack: true, env: setup.env });
    try {
      const foreign = await register(`${prefix}-foreign-value`, { type: 'record', name: `Foreign${prefix}`, fields: [{ name: 'payroll', type: 'string' }] });
      expect((await get(open.url, foreign)).status).toBe(200);
      const doc = (await (await fetch(`${open.url}/openapi.json`)).json()) as { paths: Record<string, { get: { security?: unknown[] } }> };
      expect(doc.paths['/schemas/ids/{id}']!.get.security).toEqual([]);
    } finally {
      await open.close();
    }
  }, 30_000);
});
