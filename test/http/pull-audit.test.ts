/**
 * An admin committing the cursor of another owner's pull subscription (`POST …/cursors?owner=`)
 * changes that subscription's position: it is written to the audit log like a replay (issue 11;
 * docs/security.md "Audit"). The owner's own commits are not admin actions and write no line.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPartnersGateway } from './partners-gateway.js';
import type { PartnersGateway } from './partners-gateway.js';

describe('pull cursor commits on another owner\'s subscription', () => {
  let pg: PartnersGateway;
  beforeAll(async () => {
    pg = await startPartnersGateway(`pullaud${Date.now().toString(36)}`, 'info');
  });
  afterAll(async () => {
    await pg?.close();
  });

  const call = async (method: string, path: string, key: string, body?: unknown): Promise<Response> =>
    fetch(`${pg.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const auditLines = (): Record<string, unknown>[] =>
    pg.logs.join('').split('\n').filter((l) => l.includes('"audit":true')).map((l) => JSON.parse(l) as Record<string, unknown>);

  it('an admin\'s commit with ?owner= writes an audit line naming the admin, the action, the owner and the subscription', async () => {
    const name = `pa-${randomUUID().slice(0, 8)}`;
    expect((await call('POST', '/subscriptions', pg.setup.keys.acme, { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).status).toBe(201);
    const pulled = await call('GET', `/subscriptions/${name}/events?owner=acme&wait=0`, pg.setup.keys.ops);
    expect(pulled.status).toBe(200);
    const cursor = pulled.headers.get('ce-gateway-cursor')!;
    await pulled.arrayBuffer();
    // the owner's own commit is no admin action: no line
    expect((await call('POST', `/subscriptions/${name}/cursors`, pg.setup.keys.acme, { cursor })).status).toBe(204);
    expect(auditLines().filter((l) => (l.target as { subscription?: string } | undefined)?.subscription === name && l.action === 'commit-cursor')).toEqual([]);
    expect((await call('POST', `/subscriptions/${name}/cursors?owner=acme`, pg.setup.keys.ops, { cursor })).status).toBe(204);
    const lines = auditLines().filter((l) => (l.target as { subscription?: string } | undefined)?.subscription === name);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ audit: true, partner: 'ops', admin: true, action: 'commit-cursor', target: { owner: 'acme', subscription: name }, outcome: 'ok' });
  });
});
