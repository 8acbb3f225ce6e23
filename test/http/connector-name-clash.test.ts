/**
 * A subscription stored through the HTTP API by the anonymous owner and a short-form connector
 * (`kind: shell-hook` / `file-drop`) of the same name: both are listed and the routes by name answer
 * the stored one, so the connector's status and dead letters are out of reach by name. A create
 * under a running connector's name is refused (409 naming `name`); one stored before the connector
 * started (or on an instance that does not run it) is said at start-up, once, naming both consumer
 * groups and what to do. A real gateway on the in-memory adapters, its log read; the connectors
 * started as `serve` starts them (startConnectors).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConnectors, startConnectors } from '../../src/connectors/index.js';
import type { ConnectorsHandle } from '../../src/connectors/index.js';
import type { Gateway } from '../../src/app/index.js';
import { listening } from '../helpers/gateway.js';
import { gatewayWithLogs } from '../helpers/logged-gateway.js';
import { createLogger } from '../../src/observability/index.js';
import { tempDir } from '../unit/connectors/helpers.js';
import { fetchJson } from './helpers.js';
import type { Answer } from './helpers.js';

let gw: Gateway;
let logs: () => string;
let url: string;
let connectors: ConnectorsHandle | undefined;
const dir = tempDir('ceg-conn-clash-');

beforeAll(async () => {
  writeFileSync(join(dir.dir, 'hooked-drop.yaml'), `kind: file-drop\nsubscription: hooked\nkinds: [PriceLoadingCompleted]\nsink: { directory: ${join(dir.dir, 'out')} }\n`);
  writeFileSync(join(dir.dir, 'later-drop.yaml'), `kind: file-drop\nsubscription: later\nkinds: [PriceLoadingCompleted]\nsink: { directory: ${join(dir.dir, 'out2')} }\n`);
  ({ gw, logs } = gatewayWithLogs({ INSTANCE_ID: 'mem-1' }));
  url = await listening(gw);
});

afterAll(async () => {
  await connectors?.stop({ withinMs: 1000 });
  await gw?.close();
  dir.remove();
});

const call = (path: string, init: RequestInit = {}): Promise<Answer> => fetchJson(`${url}${path}`, init);
const create = (name: string): Promise<{ status: number; body: Record<string, unknown> }> =>
  call('/subscriptions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
const clashLines = (): Record<string, unknown>[] =>
  logs().split('\n').filter((l) => l.includes('has the name of the')).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('a stored subscription named as a short-form connector', () => {
  it('is said at start-up when it was stored before the connector started, once, naming both groups', async () => {
    expect((await create('hooked')).status).toBe(201);
    expect(clashLines()).toEqual([]);
    connectors = await startConnectors(gw, loadConnectors(dir.dir, { environment: {} }), createLogger({ level: 'silent' }));
    const said = clashLines();
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 40, subscription: 'ce-gateway.sub.anonymous.hooked', name: 'hooked', connector: 'hooked-drop', connectorKind: 'file-drop', connectorGroup: 'hooked' });
    expect(said[0]!.msg).toContain('delete the stored one or rename the connector');
    // Both listed under one name, as the line says.
    const items = (await call('/subscriptions')).body.items as { name: string; origin: string }[];
    expect(items.filter((i) => i.name === 'hooked').map((i) => i.origin).sort()).toEqual(['api', 'file']);
    // A change of the definitions (another subscription created) does not say it again.
    expect((await create('unrelated')).status).toBe(201);
    expect(clashLines()).toHaveLength(1);
  });

  it('refuses creating one under a running connector\'s name: 409 problem naming name', async () => {
    const r = await call('/subscriptions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'later', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'CEG_CONFLICT', retriable: false, violations: [{ field: 'name' }] });
    expect(String(r.body.detail)).toContain('later');
    expect(((await call('/subscriptions')).body.items as { name: string }[]).filter((i) => i.name === 'later')).toHaveLength(1);
  });
});
