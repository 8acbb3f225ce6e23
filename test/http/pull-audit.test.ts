/**
 * An admin committing the cursor of another owner's pull subscription (`POST …/cursors?owner=`)
 * changes that subscription's position: it is written to the audit log like a replay (issue 11;
 * docs/security.md "Audit"). The owner's own commits are not admin actions and write no line.
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

describe('pull cursor commits on another owner\'s subscription', () => {
  let setup: PartnersSetup;
  let gw: Gateway;
  let url: string;
  const logs: string[] = [];

  beforeAll(async () => {
    const prefix = `pullaud${Date.now().toString(36)}`;
    setup = partnersSetup(prefix);
    process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
    const out = new PassThrough();
    out.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SUBSCRIPTIONS_TOPIC: `${prefix}.subscriptions`, ...setup.env }), createLogger({ level: 'info', destination: out }));
    const addr = await gw.listen();
    await gw.ready;
    await gw.subscriptionsLoaded();
    url = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(async () => {
    await gw?.close();
    setup?.cleanup();
  });

  const call = async (method: string, path: string, key: string, body?: unknown): Promise<Response> =>
    fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const auditLines = (): Record<string, unknown>[] =>
    logs.join('').split('\n').filter((l) => l.includes('"audit":true')).map((l) => JSON.parse(l) as Record<string, unknown>);

  it('an admin\'s commit with ?owner= writes an audit line naming the admin, the action, the owner and the subscription', async () => {
    const name = `pa-${randomUUID().slice(0, 8)}`;
    expect((await call('POST', '/subscriptions', setup.keys.acme, { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).status).toBe(201);
    const pulled = await call('GET', `/subscriptions/${name}/events?owner=acme&wait=0`, setup.keys.ops);
    expect(pulled.status).toBe(200);
    const cursor = pulled.headers.get('ce-gateway-cursor')!;
    await pulled.arrayBuffer();
    // the owner's own commit is no admin action: no line
    expect((await call('POST', `/subscriptions/${name}/cursors`, setup.keys.acme, { cursor })).status).toBe(204);
    expect(auditLines().filter((l) => (l.target as { subscription?: string } | undefined)?.subscription === name && l.action === 'commit-cursor')).toEqual([]);
    expect((await call('POST', `/subscriptions/${name}/cursors?owner=acme`, setup.keys.ops, { cursor })).status).toBe(204);
    const lines = auditLines().filter((l) => (l.target as { subscription?: string } | undefined)?.subscription === name);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ audit: true, partner: 'ops', admin: true, action: 'commit-cursor', target: { owner: 'acme', subscription: name }, outcome: 'ok' });
  });
});
