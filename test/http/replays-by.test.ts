/**
 * `GET /subscriptions/{name}/replays` for an owner that is not an admin: `by` is its own partner id
 * or `admin` — admins' partner ids are not shown to partners; an admin sees them (issue 11;
 * docs/security.md "Permissions").
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPartnersGateway } from './partners-gateway.js';
import type { PartnersGateway } from './partners-gateway.js';

describe('who replayed, as partners see it', () => {
  let pg: PartnersGateway;
  beforeAll(async () => {
    pg = await startPartnersGateway(`repby${Date.now().toString(36)}`);
  });
  afterAll(async () => {
    await pg?.close();
  });

  const call = async (method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${pg.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };

  it('the owner sees its own id and "admin" for an admin\'s replay; the admin sees both ids', async () => {
    const name = `rb-${randomUUID().slice(0, 8)}`;
    const created = await call('POST', '/subscriptions', pg.setup.keys.globex, { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await call('POST', `/subscriptions/${name}/replay`, pg.setup.keys.globex, { to: 'earliest' })).status).toBe(200);
    expect((await call('POST', `/subscriptions/${name}/replay?owner=globex`, pg.setup.keys.ops, { to: 'earliest' })).status).toBe(200);
    const owner = await call('GET', `/subscriptions/${name}/replays`, pg.setup.keys.globex);
    expect(owner.status).toBe(200);
    expect((owner.body as { by: string }[]).map((e) => e.by)).toEqual(['globex', 'admin']);
    const admin = await call('GET', `/subscriptions/${name}/replays?owner=globex`, pg.setup.keys.ops);
    expect((admin.body as { by: string }[]).map((e) => e.by)).toEqual(['globex', 'ops']);
  });
});
