/**
 * `GET /subscriptions/{name}/replays` for an owner that is not an admin: `by` is its own partner id
 * or `admin` — admins' partner ids are not shown to partners; an admin sees them (issue 11;
 * docs/security.md "Permissions").
 */
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';

describe('who replayed, as partners see it', () => {
  let setup: PartnersSetup;
  let gw: Gateway;
  let url: string;

  beforeAll(async () => {
    const prefix = `repby${Date.now().toString(36)}`;
    setup = partnersSetup(prefix);
    process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SUBSCRIPTIONS_TOPIC: `${prefix}.subscriptions`, ...setup.env }), createLogger({ level: 'silent', destination: new PassThrough() }));
    const addr = await gw.listen();
    await gw.ready;
    await gw.subscriptionsLoaded();
    url = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(async () => {
    await gw?.close();
    setup?.cleanup();
  });

  const call = async (method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };

  it('the owner sees its own id and "admin" for an admin\'s replay; the admin sees both ids', async () => {
    const name = `rb-${randomUUID().slice(0, 8)}`;
    const created = await call('POST', '/subscriptions', setup.keys.globex, { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await call('POST', `/subscriptions/${name}/replay`, setup.keys.globex, { to: 'earliest' })).status).toBe(200);
    expect((await call('POST', `/subscriptions/${name}/replay?owner=globex`, setup.keys.ops, { to: 'earliest' })).status).toBe(200);
    const owner = await call('GET', `/subscriptions/${name}/replays`, setup.keys.globex);
    expect(owner.status).toBe(200);
    expect((owner.body as { by: string }[]).map((e) => e.by)).toEqual(['globex', 'admin']);
    const admin = await call('GET', `/subscriptions/${name}/replays?owner=globex`, setup.keys.ops);
    expect((admin.body as { by: string }[]).map((e) => e.by)).toEqual(['globex', 'ops']);
  });
});
