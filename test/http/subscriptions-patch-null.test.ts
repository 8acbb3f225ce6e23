/**
 * F9: a JSON merge patch that sets a required field to null (`{"delivery":{"url":null}}`) is
 * refused naming the field and saying what was sent — null, which removes a member (RFC 7396) —
 * not "expected string, received undefined".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startSink } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';

let gw: TestGateway;
let sink: TestSink;
beforeAll(async () => {
  gw = await startGateway({ stack: false, env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } });
  await gw.gateway.subscriptionsLoaded();
  sink = await startSink();
});
afterAll(async () => {
  await sink?.close();
  await gw?.close();
});

async function api(method: string, path: string, body: unknown, contentType = 'application/json'): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: { 'content-type': contentType }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

describe('PATCH /subscriptions/{name} with null for a required field', () => {
  it('says null removes the field and it is required (not "received undefined")', async () => {
    const name = `patch-null-${Date.now()}`;
    const created = await api('POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: sink.url } });
    expect(created.status).toBe(201);
    const r = await api('PATCH', `/subscriptions/${name}`, { delivery: { url: null } }, 'application/merge-patch+json');
    expect(r.status).toBe(400);
    const v = (r.body.violations as { field: string; reason: string }[]).find((x) => x.field === 'delivery.url');
    expect(v?.reason).toMatch(/^required: null removes a field in a JSON merge patch \(RFC 7396\); send a string instead$/);
    expect(JSON.stringify(r.body)).not.toContain('received undefined');
  });
});
