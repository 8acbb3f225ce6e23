import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, structuredPriceEvent } from '../fixtures/events.js';
import { post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw.close();
});

async function get(path: string): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(`${gw.url}${path}`);
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

describe('GET /catalog', () => {
  it('lists every kind with its public fields', async () => {
    const r = await get('/catalog');
    expect(r.status).toBe(200);
    expect(r.type).toContain('application/json');
    const body = JSON.parse(r.text) as { kinds: Record<string, unknown>[] };
    expect(body.kinds).toHaveLength(6);
    const price = body.kinds.find((k) => k.eventId === PRICE_LOADING_COMPLETED)!;
    expect(price).toEqual({
      eventId: PRICE_LOADING_COMPLETED,
      name: 'PriceLoadingCompleted',
      description: 'A price load for one instrument and timeframe finished (PDSP).',
      topic: PRICE_TOPIC,
      subject: `${PRICE_TOPIC}-value`,
      keyFields: ['instrument', 'timeframe'],
      eventClass: 'notification',
      maxDataBytes: 1024,
      publish: true,
      owner: 'pdsp',
      compatibility: 'FULL_TRANSITIVE',
    });
    expect(body.kinds.map((k) => k.name)).toEqual(gw.gateway.catalog.kinds.map((k) => k.name));
  });
});

describe('GET /schemas/ids/:id', () => {
  it('serves the registered schema text that dataschema points at', async () => {
    const binding = gw.gateway.codec().binding(PRICE_LOADING_COMPLETED)!;
    const r = await get(`/schemas/ids/${binding.schema.id}`);
    expect(r.status).toBe(200);
    expect(r.type).toContain('application/json');
    expect(r.text).toBe(binding.kind.schema);
    expect(gw.gateway.config.dataschemaBase.endsWith('/schemas/ids/')).toBe(true);
  });

  it('an unknown id is a 404 problem+json naming the id', async () => {
    const r = await get('/schemas/ids/999999');
    expect(r.status).toBe(404);
    expect(r.type).toContain('application/problem+json');
    const p = JSON.parse(r.text) as Record<string, unknown>;
    expect(p).toMatchObject({ type: 'urn:ce-gateway:error:CEG_NOT_FOUND', status: 404, code: 'CEG_NOT_FOUND', retriable: false, instance: '/schemas/ids/999999' });
    expect(p.detail).toBe('no schema with id 999999');
  });

  it('an id that is not a non-negative integer is not found (404 problem+json)', async () => {
    const r = await get('/schemas/ids/abc');
    expect(r.status).toBe(404);
    expect(r.type).toContain('application/problem+json');
    expect(JSON.parse(r.text)).toMatchObject({ code: 'CEG_NOT_FOUND', violations: [{ field: 'id' }] });
  });
});

describe('routing', () => {
  it('an unknown path is a 404 problem+json with the path as instance', async () => {
    const r = await get('/nope?x=1');
    expect(r.status).toBe(404);
    expect(r.type).toContain('application/problem+json');
    expect(JSON.parse(r.text)).toEqual({
      type: 'urn:ce-gateway:error:CEG_NOT_FOUND',
      title: 'Not found',
      status: 404,
      detail: 'no route GET /nope',
      code: 'CEG_NOT_FOUND',
      retriable: false,
      instance: '/nope',
    });
  });

  it('a path with a trailing slash is no route, for every route alike (POST /subscriptions/ reached the route, /events/ did not)', async () => {
    const body = JSON.stringify({ name: 'trailing-slash', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
    const asked: [string, string][] = [
      ['POST', '/subscriptions/'],
      ['GET', '/subscriptions/'],
      ['GET', '/subscriptions/trailing-slash/'],
      ['GET', '/subscriptions/trailing-slash/status/'],
      ['DELETE', '/subscriptions/trailing-slash/'],
      ['GET', '/catalog/'],
      ['POST', '/events/'],
      ['GET', '/healthz/'],
    ];
    for (const [method, path] of asked) {
      const res = await fetch(`${gw.url}${path}?owner=x`, { method, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get('content-type'), `${method} ${path}`).toContain('application/problem+json');
      expect(await res.json(), `${method} ${path}`).toMatchObject({ code: 'CEG_NOT_FOUND', instance: path, detail: `no route ${method} ${path}: paths end without a slash` });
    }
    // Nothing was created by the POST: the name is free.
    const list = (await (await fetch(`${gw.url}/subscriptions`)).json()) as { items: { name: string }[] };
    expect(list.items.map((i) => i.name)).not.toContain('trailing-slash');
    // The console page (typed into a browser) is sent on instead, its query kept; only GET and HEAD.
    const page = await fetch(`${gw.url}/console/?x=1`, { redirect: 'manual' });
    expect(page.status).toBe(308);
    expect(page.headers.get('location')).toBe('/console?x=1');
    expect((await fetch(`${gw.url}/console/`, { method: 'POST', redirect: 'manual' })).status).toBe(404);
    // `/` stays what it was (no route here either, but not for its slash).
    expect(JSON.parse((await get('/')).text)).toMatchObject({ code: 'CEG_NOT_FOUND', detail: 'no route GET /' });
  });

  it('GET /events is not the ingress: 405 problem with Allow: POST', async () => {
    const r = await get('/events');
    expect(r.status).toBe(405);
    expect(r.type).toContain('application/problem+json');
  });

  it('POST /events?x=1 still reaches the ingress (query ignored)', async () => {
    const res = await fetch(`${gw.url}/events?x=1`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(res.status).toBe(415);
  });

  it('GET /healthz and /readyz', async () => {
    expect(await get('/healthz')).toMatchObject({ status: 200, text: '{"status":"ok"}' });
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ status: 'ready', checks: { broker: true, schemaRegistry: true, bootstrapped: true, subscriptions: true, subscriptionDefinitions: true }, durable: false, warning: 'in-memory transport or registry: nothing is durable' });
  });

  it('GET /metrics counts what the ingress published', async () => {
    expect((await post(gw.url, structuredPriceEvent())).status).toBe(202);
    const r = await get('/metrics');
    expect(r.status).toBe(200);
    expect(r.type).toContain('text/plain');
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(r.text)?.[1]);
    expect(value('ce_gateway_publish_acknowledged_total')).toBeGreaterThanOrEqual(1);
    expect(value('ce_gateway_publish_enqueued_total')).toBe(value('ce_gateway_publish_acknowledged_total'));
    expect(value('ce_gateway_publish_queue_records')).toBe(0);
    expect(value('ce_gateway_ready')).toBe(1);
  });
});

describe('health, readiness and metrics: GET and HEAD; other methods 405', () => {
  it('HEAD answers as GET does, without a body', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const got = await fetch(`${gw.url}${path}`);
      const head = await fetch(`${gw.url}${path}`, { method: 'HEAD' });
      expect(head.status, path).toBe(got.status);
      expect(head.headers.get('content-type'), path).toBe(got.headers.get('content-type'));
      expect(await head.text(), path).toBe('');
      expect((await got.text()).length, path).toBeGreaterThan(0);
    }
  });

  it('POST, PUT, DELETE: 405 problem+json with Allow: GET, HEAD', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await fetch(`${gw.url}${path}`, { method, ...(method === 'DELETE' ? {} : { body: '{}' }) });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get('allow')).toBe('GET, HEAD');
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(((await res.json()) as { code: string }).code).toBe('CEG_METHOD_NOT_ALLOWED');
      }
    }
  });
});
