/**
 * The dead-letter and status routes (issue 10) on a gateway built on the in-memory adapters: a
 * library subscription addressed by its name (dots included), the answer shapes, problem+json
 * naming the field, 404 / 405 / 415.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConnectors } from '../../src/connectors/index.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC } from '../fixtures/events.js';
import { tempDir } from '../unit/connectors/helpers.js';
import type { Gateway } from '../../src/app/index.js';
import { startGateway } from '../helpers/gateway.js';
import { deadLetter } from '../../src/bus/subscriber/index.js';
import type { Subscription } from '../../src/bus/subscriber/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { waitFor } from '../helpers/wait.js';
import { post } from './helpers.js';

let gw: Gateway;
let url: string;
let sub: Subscription;
const NAME = 'svc.orders-reader';
const dir = tempDir('ceg-dl-files-');

beforeAll(async () => {
  writeFileSync(join(dir.dir, 'drops.yaml'), `kind: subscription\nname: drops\nowner: ops\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: file-drop, sink: { directory: out } }\n`);
  const defs = loadConnectors(dir.dir, { environment: {} });
  ({ gateway: gw, url } = await startGateway({ stack: false, env: { INSTANCE_ID: 'mem-1' }, subscriptions: defs.flatMap((d) => (d.kind === 'subscription' ? [d.runtime] : [])) }));
  sub = await gw.subscribe({ subscription: NAME, kinds: ['PriceLoadingCompleted'], retry: retryPolicy({ maxAttempts: 1, initialDelayMs: 0, factor: 1, maxDelayMs: 0, jitter: 0 }), handler: () => Promise.resolve(deadLetter('refused here')) });
});

afterAll(async () => {
  await sub?.unsubscribe();
  await gw?.close();
  dir.remove();
});

const get = async (path: string, init: RequestInit = {}): Promise<{ status: number; type: string; allow: string | null; body: Record<string, unknown> }> => {
  const res = await fetch(`${url}${path}`, init);
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', allow: res.headers.get('allow'), body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
};

describe('dead letters and status over HTTP', () => {
  it('lists a library subscription\'s dead letters by its name, with the event decoded', async () => {
    const e = structuredPriceEvent({ subject: 'http-dl' });
    expect((await post(url, e)).status).toBe(202);
    const page = await waitFor('the dead letter listed', async () => {
      const r = await get(`/subscriptions/${NAME}/deadletters`);
      return (r.body.items as unknown[]).length === 1 ? r : undefined;
    }, 5000);
    expect(page.status).toBe(200);
    expect(page.body.next).toBeNull();
    const [item] = page.body.items as Record<string, unknown>[];
    expect(item).toMatchObject({ id: e.id, source: e.source, reason: 'refused here', attempts: 1, lastStatus: null, redriven: 0, redrivenAt: null, deadLetter: { topic: `${NAME}.dlq`, partition: 0, offset: '0' } });
    expect(item!.event).toMatchObject({ id: e.id, subject: 'http-dl', datacontenttype: 'application/json', data: { barKey: (e.data as { barKey: string }).barKey } });
    const st = await get(`/subscriptions/${NAME}/status`);
    expect(st.body).toMatchObject({ name: NAME, group: NAME, origin: 'library', state: 'active', running: true, deadLettered: 1, delivered: 0, scope: 'instance', instance: 'mem-1', lastError: { reason: 'refused here' } });
    expect((st.body.lag as { total: number }).total).toBe(0);
  });

  it('a connector file\'s subscription by its name: a poison record listed with why it is not an event; status names its group and origin', async () => {
    const enc = new TextEncoder();
    await gw.transport.produce(PRICE_TOPIC, [{ key: null, value: enc.encode('not avro'), headers: [['ce_specversion', enc.encode('1.0')], ['ce_id', enc.encode('poison-1')], ['ce_source', enc.encode('urn:x')], ['ce_type', enc.encode(PRICE_LOADING_COMPLETED)]] }]);
    const page = await waitFor('the poison record listed', async () => {
      const r = await get('/subscriptions/drops/deadletters');
      return r.status === 200 && (r.body.items as unknown[]).length === 1 ? r : undefined;
    }, 5000);
    const [item] = page.body.items as Record<string, unknown>[];
    expect(item).toMatchObject({ id: 'poison-1', source: 'urn:x', event: null, attempts: 1, deadLetter: { topic: 'ce-gateway.sub.ops.drops.dlq' } });
    expect(String(item!.reason)).toMatch(/^poison: /);
    expect(typeof item!.eventProblem).toBe('string');
    expect((await get('/subscriptions/drops/status')).body).toMatchObject({ group: 'ce-gateway.sub.ops.drops', origin: 'file', state: 'active', running: true });
  });

  it('a pull subscription: its status has the cursors\' lag and no member; a redrive is refused (409), nothing would deliver it', async () => {
    const created = await get('/subscriptions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'puller', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await get('/subscriptions/puller/status')).body).toMatchObject({ origin: 'api', state: 'active', running: false, delivered: 0 });
    const redrive = await get('/subscriptions/puller/deadletters/redrive', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"all":true}' });
    expect(redrive).toMatchObject({ status: 409, body: { code: 'CEG_CONFLICT', violations: [{ field: 'name' }] } });
    expect((await get('/subscriptions/puller/deadletters')).body).toEqual({ items: [], next: null });
  });

  it('refuses what it cannot do, naming the field: problem+json, 404, 405 with Allow, 415', async () => {
    const bad = await get(`/subscriptions/${NAME}/deadletters?limit=5000`);
    expect(bad).toMatchObject({ status: 400, body: { code: 'CEG_INVALID_PARAMETER', violations: [{ field: 'limit' }] } });
    expect(bad.type).toContain('application/problem+json');
    const noIds = await get(`/subscriptions/${NAME}/deadletters/redrive`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ids":[]}' });
    expect(noIds).toMatchObject({ status: 400, body: { violations: [{ field: 'ids' }] } });
    const noBody = await get(`/subscriptions/${NAME}/deadletters/redrive`, { method: 'POST' });
    expect(noBody).toMatchObject({ status: 400, body: { violations: [{ field: 'body' }] } });
    expect((await get(`/subscriptions/${NAME}/deadletters`, { method: 'DELETE', headers: { 'content-type': 'text/plain' }, body: 'all' })).status).toBe(415);
    expect((await get('/subscriptions/nobody/deadletters')).status).toBe(404);
    expect((await get('/subscriptions/nobody/status')).status).toBe(404);
    expect(await get(`/subscriptions/${NAME}/status`, { method: 'POST' })).toMatchObject({ status: 405, allow: 'GET, HEAD' });
    expect(await get(`/subscriptions/${NAME}/deadletters`, { method: 'PUT' })).toMatchObject({ status: 405, allow: 'GET, HEAD, DELETE' });
  });

  it('purges by id over HTTP; an unknown id is reported, not an error', async () => {
    const r = await get(`/subscriptions/${NAME}/deadletters`);
    const [item, ...rest] = r.body.items as { id: string }[]; // the library subscription's, and the poison record it read too
    const purged = await get(`/subscriptions/${NAME}/deadletters`, { method: 'DELETE', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ids: [item!.id, 'nope'] }) });
    expect(purged).toMatchObject({ status: 200, body: { purged: 1, notFound: ['nope'] } });
    expect(((await get(`/subscriptions/${NAME}/deadletters`)).body.items as { id: string }[]).map((i) => i.id)).toEqual(rest.map((i) => i.id));
    // A selection that did not arrive purges nothing: Node's http.request sends a DELETE's body
    // without Content-Length (so, by HTTP/1.1 framing, no body) and keeps its Content-Type.
    // What the gateway then sees is a Content-Type and no content, with or without `Content-Length: 0`.
    for (const headers of [{ 'content-type': 'application/json' }, { 'content-type': 'application/json', 'content-length': '0' }] as Record<string, string>[]) {
      const lost = await get(`/subscriptions/${NAME}/deadletters`, { method: 'DELETE', headers });
      expect(lost).toMatchObject({ status: 400, body: { code: 'CEG_MALFORMED_REQUEST', violations: [{ field: 'body' }] } });
      expect(lost.type).toContain('application/problem+json');
      const stillThere = ((await get(`/subscriptions/${NAME}/deadletters`)).body.items as { id: string }[]).map((i) => i.id);
      expect(stillThere).toEqual(rest.map((i) => i.id));
    }
    expect((await get(`/subscriptions/${NAME}/deadletters`, { method: 'DELETE' })).body).toEqual({ purged: rest.length, items: [], notFound: [] });
    expect((await get(`/subscriptions/${NAME}/deadletters`)).body).toEqual({ items: [], next: null });
  });
});
