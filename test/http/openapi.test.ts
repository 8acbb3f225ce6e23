/**
 * The OpenAPI 3.1 document (issue 11): valid against the OpenAPI 3.1 schema (offline, the schema
 * shipped in @seriousme/openapi-schema-validator); names every route the express app and the
 * node:http server really serve; and a contract test sends real requests to a gateway (in-memory
 * adapters, partners with keys) and checks each answer's status, content type, required headers
 * and body (ajv, JSON Schema 2020-12) against the document, covering every documented operation.
 */
import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadCatalog } from '../../src/catalog/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createApiApp } from '../../src/http/api/app.js';
import { buildOpenApi } from '../../src/http/api/openapi/document.js';
import { SERVER_ROUTES } from '../../src/http/server.js';
import { createLogger } from '../../src/observability/index.js';
import { createMemoryRegistry } from '../../src/registry/index.js';
import { priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';
import { listening } from '../helpers/gateway.js';

type Doc = { paths: Record<string, Record<string, { responses: Record<string, Record<string, unknown>> }>>; components: { responses: Record<string, Record<string, unknown>> } };

const doc = buildOpenApi({ publicBaseUrl: 'http://127.0.0.1:8080', metricsPublic: false }) as unknown as Doc;

/** Every route of an express app, in OpenAPI form (`:name` → `{name}`); `all()` handlers (405 answers) left out. */
function expressRoutes(stack: readonly { route?: { path: string | string[]; methods: Record<string, boolean> }; handle?: { stack?: unknown[] } }[]): { method: string; path: string }[] {
  const out: { method: string; path: string }[] = [];
  for (const layer of stack) {
    if (layer.route !== undefined) {
      // `all()` and `head()` handlers only answer 405 (express would answer HEAD with the GET handler).
      const paths = ([] as string[]).concat(layer.route.path);
      for (const m of Object.keys(layer.route.methods)) if (m !== '_all' && m !== 'head') for (const p of paths) out.push({ method: m, path: p.replace(/:([A-Za-z0-9_]+)/g, '{$1}') });
    } else if (Array.isArray(layer.handle?.stack)) out.push(...expressRoutes(layer.handle.stack as never));
  }
  return out;
}

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1', async () => {
    const v = new Validator();
    const r = await v.validate(doc);
    expect(r.errors ?? []).toEqual([]);
    expect(r.valid).toBe(true);
    expect(v.version).toBe('3.1');
  });

  it('names every route the server and the express app serve (and nothing they do not)', () => {
    const app = createApiApp({ catalog: loadCatalog(), registry: createMemoryRegistry(), docs: {}, retryAfterS: 1, subscriptions: () => undefined, pull: () => undefined, replays: () => undefined, operations: () => undefined, console: {} as never });
    const real = [...SERVER_ROUTES, ...expressRoutes((app as unknown as { router: { stack: never[] } }).router.stack)].map((r) => `${r.method.toUpperCase()} ${r.path}`);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).filter((m) => m !== 'parameters').map((m) => `${m.toUpperCase()} ${path}`));
    expect(real.length).toBeGreaterThan(10);
    expect(real.filter((r) => !documented.includes(r)), 'routes missing from the document').toEqual([]);
    expect(documented.filter((d) => !real.includes(d)), 'documented routes that do not exist').toEqual([]);
  });

  it('marks the public routes `security: []` and every other one bearer-protected', () => {
    const open = new Set(['GET /healthz', 'GET /readyz', 'GET /catalog', 'GET /asyncapi.json', 'GET /asyncapi.yaml', 'GET /openapi.json', 'GET /schemas/json/{file}', 'GET /console', 'GET /console/app.js', 'GET /console/app.css', 'GET /console/favicon.svg']);
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        const security = (op as { security?: unknown[] }).security;
        expect(security === undefined ? 'bearer' : security.length === 0 ? 'public' : 'other', `${m} ${path}`).toBe(open.has(`${m.toUpperCase()} ${path}`) ? 'public' : 'bearer');
      }
    }
  });
});

describe('contract: real answers against the document', () => {
  let setup: PartnersSetup;
  let gw: Gateway;
  let url: string;
  const seen = new Set<string>();
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema({ ...(doc as object), $id: 'openapi' });
  const validators = new Map<string, ValidateFunction>();

  beforeAll(async () => {
    const prefix = `oa${Date.now().toString(36)}`;
    setup = partnersSetup(prefix);
    process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', ...setup.env });
    gw = createGateway(config, createLogger({ level: 'silent' }));
    url = await listening(gw);
  });
  afterAll(async () => {
    await gw?.close();
    setup?.cleanup();
  });

  const templateOf = (path: string): string | undefined => {
    const p = path.split('?')[0]!;
    return Object.keys(doc.paths).find((t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+').replace(/\./g, '\\.')}$`).test(p));
  };
  const resolve = (r: Record<string, unknown>): Record<string, unknown> => (typeof r.$ref === 'string' ? doc.components.responses[r.$ref.split('/').pop()!]! : r);

  /** Sends a request and checks its answer against the document. */
  async function check(method: string, path: string, opts: { key?: string; body?: unknown; contentType?: string } = {}): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = {};
    if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`;
    if (opts.body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
    const res = await fetch(`${url}${path}`, { method, headers, ...(opts.body === undefined ? {} : { body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) }) });
    const text = await res.text();
    const template = templateOf(path);
    const where = `${method} ${path} → ${res.status}`;
    expect(template, `${where}: path in the document`).toBeDefined();
    const op = doc.paths[template!]![method.toLowerCase()];
    expect(op, `${where}: operation in the document`).toBeDefined();
    const documented = op!.responses[String(res.status)];
    expect(documented, `${where}: status documented (${text.slice(0, 200)})`).toBeDefined();
    seen.add(`${method} ${template}`);
    const response = resolve(documented!);
    const content = response.content as Record<string, { schema: unknown }> | undefined;
    for (const [name, h] of Object.entries((response.headers ?? {}) as Record<string, { required?: boolean }>)) {
      if (h.required === true) expect(res.headers.get(name), `${where}: header ${name}`).not.toBeNull();
    }
    if (content === undefined) {
      expect(text, `${where}: no body`).toBe('');
      return { status: res.status, body: undefined };
    }
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    const media = Object.keys(content).find((m) => m === type);
    expect(media, `${where}: content type ${type} documented (${Object.keys(content).join(', ')})`).toBeDefined();
    const body: unknown = type.endsWith('json') ? JSON.parse(text) : text;
    const key = `${template} ${method} ${res.status} ${media}`;
    let validate = validators.get(key);
    if (validate === undefined) {
      const pointer = typeof documented!.$ref === 'string' ? `openapi#/components/responses/${documented!.$ref.split('/').pop()}/content/${media!.replace(/\//g, '~1')}/schema` : `openapi#/paths/${template!.replace(/~/g, '~0').replace(/\//g, '~1')}/${method.toLowerCase()}/responses/${res.status}/content/${media!.replace(/\//g, '~1')}/schema`;
      validate = ajv.compile({ $ref: pointer });
      validators.set(key, validate);
    }
    expect(validate(body), `${where}: ${JSON.stringify(validate.errors)}`).toBe(true);
    return { status: res.status, body };
  }

  it('every documented operation answers as documented', async () => {
    const k = setup.keys;
    const name = `oa-${randomUUID().slice(0, 8)}`;
    const hook = { mode: 'push', url: 'http://127.0.0.1:9/hook' };
    // operational and public
    expect((await check('GET', '/healthz')).status).toBe(200);
    expect((await check('GET', '/readyz')).status).toBe(200);
    expect((await check('GET', '/metrics', { key: k.ops })).status).toBe(200);
    expect((await check('GET', '/metrics', { key: k.acme })).status).toBe(403);
    expect((await check('GET', '/metrics')).status).toBe(401);
    expect((await check('GET', '/catalog')).status).toBe(200);
    expect((await check('GET', '/asyncapi.json')).status).toBe(200);
    expect((await check('GET', '/asyncapi.yaml')).status).toBe(200);
    expect((await check('GET', '/openapi.json')).status).toBe(200);
    expect((await check('GET', '/schemas/json/PriceLoadingCompleted.json')).status).toBe(200);
    expect((await check('GET', '/schemas/json/Nope.json')).status).toBe(404);
    expect((await check('GET', '/schemas/ids/1', { key: k.ops })).status).toBe(200);
    expect((await check('GET', '/schemas/ids/99999999', { key: k.acme })).status).toBe(404);
    expect((await check('GET', '/schemas/ids/1')).status).toBe(200); // public by default (SCHEMAS_AUTH=public: dataschema links readable, issue 11)
    // ingress
    expect((await check('POST', '/events', { key: k.acme, body: structuredPriceEvent({ source: 'urn:partner:acme' }), contentType: 'application/cloudevents+json' })).status).toBe(202);
    expect((await check('POST', '/events', { key: k.acme, body: structuredPriceEvent({ source: 'urn:partner:acme' }, { ...priceLoaded(), barsLoaded: 'x' }), contentType: 'application/cloudevents+json' })).status).toBe(400);
    expect((await check('POST', '/events', { key: k.acme, body: structuredPriceEvent({ source: 'urn:partner:other' }), contentType: 'application/cloudevents+json' })).status).toBe(403);
    expect((await check('POST', '/events', { key: k.acme, body: 'x', contentType: 'text/plain' })).status).toBe(415);
    expect((await check('POST', '/events', { body: '{}', contentType: 'application/cloudevents+json' })).status).toBe(401);
    // subscriptions
    expect((await check('POST', '/subscriptions', { key: k.acme, body: { name, kinds: ['PriceLoadingCompleted'], delivery: hook, state: 'paused' } })).status).toBe(201);
    expect((await check('POST', '/subscriptions', { key: k.acme, body: { name, kinds: ['PriceLoadingCompleted'], delivery: hook } })).status).toBe(409);
    expect((await check('POST', '/subscriptions', { key: k.acme, body: { name: 'x', kinds: ['Nope'], delivery: hook } })).status).toBe(400);
    expect((await check('POST', '/subscriptions', { key: k.globex, body: { name: 'x', kinds: ['StrategySignal'], delivery: hook } })).status).toBe(403);
    expect((await check('POST', '/subscriptions', { key: k.acme, body: 'x', contentType: 'text/plain' })).status).toBe(415);
    expect((await check('GET', '/subscriptions', { key: k.acme })).status).toBe(200);
    expect((await check('GET', '/subscriptions?owner=acme', { key: k.globex })).status).toBe(404);
    expect((await check('GET', `/subscriptions/${name}`, { key: k.acme })).status).toBe(200);
    expect((await check('GET', `/subscriptions/${name}`, { key: k.globex })).status).toBe(404);
    expect((await check('PATCH', `/subscriptions/${name}`, { key: k.acme, body: { rateLimit: 3 }, contentType: 'application/merge-patch+json' })).status).toBe(200);
    expect((await check('PATCH', `/subscriptions/${name}`, { key: k.acme, body: { name: 'other' }, contentType: 'application/merge-patch+json' })).status).toBe(400);
    expect((await check('DELETE', `/subscriptions/${name}`, { key: k.globex })).status).toBe(404);
    expect((await check('DELETE', `/subscriptions/${name}`, { key: k.acme })).status).toBe(204);
    expect((await check('GET', `/subscriptions/${name}`)).status).toBe(401);
    // pull delivery
    const pulled = `oa-pull-${randomUUID().slice(0, 8)}`;
    expect((await check('POST', '/subscriptions', { key: k.acme, body: { name: pulled, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' }, start: 'earliest' } })).status).toBe(201);
    const pulledOnce = await fetch(`${url}/subscriptions/${pulled}/events?max=1`, { headers: { authorization: `Bearer ${k.acme}` } });
    const cursor = pulledOnce.headers.get('ce-gateway-cursor');
    await pulledOnce.text();
    expect(cursor).not.toBeNull();
    expect((await check('GET', `/subscriptions/${pulled}/events?max=5`, { key: k.acme })).status).toBe(200);
    expect((await check('GET', `/subscriptions/${pulled}/events?max=0`, { key: k.acme })).status).toBe(400);
    expect((await check('GET', `/subscriptions/${pulled}/events?owner=acme`, { key: k.globex })).status).toBe(404);
    expect((await check('POST', `/subscriptions/${pulled}/cursors`, { key: k.acme, body: { cursor } })).status).toBe(204);
    expect((await check('POST', `/subscriptions/${pulled}/cursors?owner=acme`, { key: k.globex, body: { cursor } })).status).toBe(404);
    expect((await check('GET', `/subscriptions/${pulled}/stream?owner=acme`, { key: k.globex })).status).toBe(404);
    expect((await check('GET', `/subscriptions/${pulled}/stream`)).status).toBe(401);
    expect((await check('DELETE', `/subscriptions/${pulled}`, { key: k.acme })).status).toBe(204);
    // dead letters, status and replay: the owner reads; redrive, purge and replay need the permission or admin
    const dl = `oa-dl-${randomUUID().slice(0, 8)}`;
    expect((await check('POST', '/subscriptions', { key: k.acme, body: { name: dl, kinds: ['PriceLoadingCompleted'], delivery: hook } })).status).toBe(201);
    expect((await check('GET', `/subscriptions/${dl}/deadletters`, { key: k.acme })).status).toBe(200);
    expect((await check('GET', `/subscriptions/${dl}/deadletters?limit=0`, { key: k.acme })).status).toBe(400);
    expect((await check('GET', `/subscriptions/${dl}/deadletters?owner=acme`, { key: k.globex })).status).toBe(404);
    expect((await check('POST', `/subscriptions/${dl}/deadletters/redrive`, { key: k.acme, body: { all: true } })).status).toBe(403);
    expect((await check('POST', `/subscriptions/${dl}/deadletters/redrive?owner=acme`, { key: k.ops, body: { all: true } })).status).toBe(200);
    expect((await check('DELETE', `/subscriptions/${dl}/deadletters`, { key: k.acme })).status).toBe(403);
    expect((await check('DELETE', `/subscriptions/${dl}/deadletters?owner=acme`, { key: k.ops })).status).toBe(200);
    expect((await check('GET', `/subscriptions/${dl}/status`, { key: k.acme })).status).toBe(200);
    expect((await check('GET', `/subscriptions/${dl}/status?owner=acme`, { key: k.globex })).status).toBe(404);
    expect((await check('POST', `/subscriptions/${dl}/replay`, { key: k.acme, body: { to: 'latest', dryRun: true } })).status).toBe(403);
    expect((await check('POST', `/subscriptions/${dl}/replay?owner=acme`, { key: k.ops, body: { to: 'latest', dryRun: true } })).status).toBe(200);
    expect((await check('POST', `/subscriptions/${dl}/replay?owner=acme`, { key: k.ops, body: { to: 'yesterday' } })).status).toBe(400);
    expect((await check('GET', `/subscriptions/${dl}/replays`, { key: k.acme })).status).toBe(200);
    expect((await check('GET', `/subscriptions/${dl}/replays?owner=acme`, { key: k.globex })).status).toBe(404);
    // console: the page is public, the data routes are not
    expect((await check('GET', '/console')).status).toBe(200);
    expect((await check('GET', '/console/app.js')).status).toBe(200);
    expect((await check('GET', '/console/app.css')).status).toBe(200);
    expect((await check('GET', '/console/favicon.svg')).status).toBe(200);
    expect((await check('GET', '/console/api/trace/abc', { key: k.acme })).status).toBe(403);
    expect((await check('GET', '/console/api/trace/abc')).status).toBe(401);
    expect((await check('GET', `/console/api/tail/${name}`, { key: k.acme })).status).toBe(404);
    expect((await check('GET', `/console/api/tail/${name}`)).status).toBe(401);

    const all = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    expect(all.filter((o) => !seen.has(o)), 'documented operations the contract test did not call').toEqual([]);
  });
});
