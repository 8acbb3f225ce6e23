/**
 * The catalog documents over HTTP on the in-memory gateway: the AsyncAPI document (JSON and YAML)
 * and the natural-JSON JSON Schema of each kind, with their content types, and problem+json 404s
 * for what is not there. Spec: bus spec X2; DESIGN "HTTP front door".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildAsyncApi, JSON_SCHEMA_DIALECT, naturalJsonSchema, RECORD_CONTENT_TYPE } from '../../src/artifacts/export/index.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC } from '../fixtures/events.js';

type Obj = Record<string, unknown>;

const BASE = 'https://gw.example.test/api';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false, env: { PUBLIC_BASE_URL: `${BASE}/` } });
});
afterAll(async () => {
  await gw.close();
});

async function get(path: string, method = 'GET'): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(`${gw.url}${path}`, { method });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

const obj = (v: unknown): Obj => v as Obj;

describe('GET /asyncapi.json', () => {
  it('is the AsyncAPI 3.0 document of the catalog, as application/json', async () => {
    const r = await get('/asyncapi.json');
    expect(r.status).toBe(200);
    expect(r.type).toBe('application/json; charset=utf-8');
    expect(r.text.endsWith('}\n')).toBe(true);
    const doc = JSON.parse(r.text) as Obj;
    // Built from this gateway's catalog with its configured URLs (public base without the trailing slash).
    expect(doc).toEqual(buildAsyncApi(gw.gateway.catalog, { publicBaseUrl: BASE, dataschemaBase: `${BASE}/schemas/ids/` }));
    expect(doc['asyncapi']).toBe('3.0.0');
    // In-memory gateway: no Kafka server and no registry URL to advertise.
    expect(doc['servers']).toBeUndefined();
  });

  it('has one channel per topic and one message per kind keyed by eventId', async () => {
    const doc = JSON.parse((await get('/asyncapi.json')).text) as Obj;
    const catalog = gw.gateway.catalog;
    const channels = obj(doc['channels']);
    expect(Object.keys(channels)).toEqual(catalog.topics.map((t) => t.name));
    const messages = obj(obj(doc['components'])['messages']);
    expect(Object.keys(messages)).toEqual(catalog.kinds.map((k) => k.eventId));
    expect(Object.keys(messages)).toHaveLength(6);

    const channel = obj(channels[PRICE_TOPIC]);
    expect(channel['address']).toBe(PRICE_TOPIC);
    expect(channel['messages']).toEqual({ [PRICE_LOADING_COMPLETED]: { $ref: `#/components/messages/${PRICE_LOADING_COMPLETED}` } });

    const m = obj(messages[PRICE_LOADING_COMPLETED]);
    expect(m['name']).toBe('PriceLoadingCompleted');
    expect(m['x-topic']).toBe(PRICE_TOPIC);
    expect(m['contentType']).toBe(RECORD_CONTENT_TYPE);
    const headers = obj(obj(m['headers'])['properties']);
    expect(headers['ce_type']).toMatchObject({ type: 'string', const: PRICE_LOADING_COMPLETED });
    expect(headers['ce_eventname']).toMatchObject({ const: 'PriceLoadingCompleted' });
    expect(obj(m['x-schema-registry'])).toEqual({
      subject: `${PRICE_TOPIC}-value`,
      subjectNameStrategy: 'TopicNameStrategy',
      recordName: 'caishen.trading.PriceLoadingCompleted',
      compatibility: 'FULL_TRANSITIVE',
    });
    expect(m['externalDocs']).toMatchObject({ url: `${BASE}/schemas/json/${PRICE_LOADING_COMPLETED}.json` });
    // The Avro payload reference resolves to the catalog's schema, unchanged.
    expect(m['payload']).toEqual({
      schemaFormat: 'application/vnd.apache.avro+json;version=1.9.0',
      schema: { $ref: `#/components/x-avro-schemas/${PRICE_LOADING_COMPLETED}` },
    });
    const avro = obj(obj(doc['components'])['x-avro-schemas'])[PRICE_LOADING_COMPLETED];
    expect(avro).toEqual(JSON.parse(gw.gateway.catalog.byEventId(PRICE_LOADING_COMPLETED)!.schema));
  });

  it('HEAD answers with the same status and content type, no body', async () => {
    const r = await get('/asyncapi.json', 'HEAD');
    expect(r.status).toBe(200);
    expect(r.type).toBe('application/json; charset=utf-8');
    expect(r.text).toBe('');
  });
});

describe('GET /asyncapi.yaml', () => {
  it('is the same document as YAML, as application/yaml', async () => {
    const y = await get('/asyncapi.yaml');
    expect(y.status).toBe(200);
    expect(y.type).toBe('application/yaml; charset=utf-8');
    expect(y.text.startsWith('asyncapi: 3.0.0\n')).toBe(true);
    const j = await get('/asyncapi.json');
    expect(parseYaml(y.text)).toEqual(JSON.parse(j.text));
  });
});

describe('GET /schemas/json/{kind}.json', () => {
  it('serves every kind by eventId and by business name, as application/schema+json', async () => {
    for (const kind of gw.gateway.catalog.kinds) {
      const byId = await get(`/schemas/json/${kind.eventId}.json`);
      expect(byId.status, kind.eventId).toBe(200);
      expect(byId.type).toBe('application/schema+json; charset=utf-8');
      const schema = JSON.parse(byId.text) as Obj;
      expect(schema).toEqual(naturalJsonSchema(kind, { id: `${BASE}/schemas/json/${kind.eventId}.json` }));
      expect(schema['$schema']).toBe(JSON_SCHEMA_DIALECT);
      expect(schema['$id']).toBe(`${BASE}/schemas/json/${kind.eventId}.json`);
      const byName = await get(`/schemas/json/${kind.name}.json`);
      expect(byName.status).toBe(200);
      expect(byName.text).toBe(byId.text);
    }
  });

  it('describes the natural JSON of PriceLoadingCompleted: RFC 3339 timestamps, optional nullable members, no unknown members', async () => {
    const schema = JSON.parse((await get(`/schemas/json/${PRICE_LOADING_COMPLETED}.json`)).text) as Obj;
    expect(schema['type']).toBe('object');
    expect(schema['additionalProperties']).toBe(false);
    expect([...(schema['required'] as string[])].sort()).toEqual(['barKey', 'barsLoaded', 'completedAt', 'instrument', 'timeframe']);
    const props = obj(schema['properties']);
    expect(Object.keys(props)).toEqual(['instrument', 'timeframe', 'barKey', 'barsLoaded', 'firstBarAt', 'completedAt', 'feed']);
    expect(props['completedAt']).toMatchObject({ type: 'string', format: 'date-time' });
    expect(props['barsLoaded']).toMatchObject({ type: 'integer', minimum: -2147483648, maximum: 2147483647 });
  });
});

describe('404s are problem+json', () => {
  const cases: [string, string][] = [
    ['/schemas/json/NoSuchKind.json', 'kind'],
    ['/schemas/json/00000000-0000-4000-8000-000000000000.json', 'kind'],
    [`/schemas/json/${PRICE_LOADING_COMPLETED}`, 'kind'],
    [`/schemas/json/${PRICE_LOADING_COMPLETED}.yaml`, 'kind'],
    ['/schemas/json/priceloadingcompleted.json', 'kind'],
  ];
  for (const [path, field] of cases) {
    it(`GET ${path}: no such schema`, async () => {
      const r = await get(path);
      expect(r.status).toBe(404);
      expect(r.type).toContain('application/problem+json');
      const p = JSON.parse(r.text) as Obj;
      expect(p).toMatchObject({ type: 'urn:ce-gateway:error:CEG_NOT_FOUND', status: 404, code: 'CEG_NOT_FOUND', retriable: false, instance: path, violations: [{ field }] });
      expect(p['detail']).toBe(`no JSON Schema ${path.slice('/schemas/json/'.length)}: name a kind by eventId or business name, e.g. /schemas/json/<eventId>.json`);
    });
  }

  it('other document kinds and methods are no route', async () => {
    for (const [method, path] of [
      ['GET', '/asyncapi.xml'],
      ['GET', '/schemas/avro/PriceLoadingCompleted.json'],
      ['GET', '/schemas/json/'],
      ['POST', '/asyncapi.json'],
    ] as const) {
      const r = await get(path, method);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.type).toContain('application/problem+json');
      // A trailing slash is said as such (no route takes one).
      expect(JSON.parse(r.text)).toMatchObject({ code: 'CEG_NOT_FOUND', detail: `no route ${method} ${path}${path.endsWith('/') ? ': paths end without a slash' : ''}` });
    }
  });
});

describe('the query string of the public documents', () => {
  // Decided (README "HTTP API", docs/errors.md CEG_INVALID_PARAMETER): documents take no
  // parameter, so a cache buster a browser, a docs tool or a proxy adds (`?v=2`, `?_=<time>`) is
  // ignored — the same document, not a 400 — while routes with parameters refuse unknown ones.
  const paths = ['/catalog', '/openapi.json', '/asyncapi.json', '/asyncapi.yaml', `/schemas/json/${PRICE_LOADING_COMPLETED}.json`, '/console', '/console/app.js'];
  for (const path of paths) {
    it(`GET ${path}?v=2&v=3&_=1: the same document as without`, async () => {
      const plain = await get(path);
      const busted = await get(`${path}?v=2&v=3&_=1`);
      expect(plain.status).toBe(200);
      expect(busted).toEqual(plain);
    });
  }

  it('/schemas/ids/{id}, /healthz, /readyz and /metrics (answers that change between calls) ignore it too', async () => {
    const byId = await get('/schemas/ids/1');
    expect(byId.status).toBe(200);
    expect(await get('/schemas/ids/1?v=2')).toEqual(byId);
    for (const path of ['/healthz', '/readyz', '/metrics']) expect((await get(`${path}?v=2&v=3`)).status, path).toBe(200);
  });

  it('a route with parameters still refuses an unknown one (GET /subscriptions?v=2: 400 naming it)', async () => {
    const r = await get('/subscriptions?v=2');
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ code: 'CEG_INVALID_PARAMETER', violations: [{ field: 'v' }] });
  });
});
