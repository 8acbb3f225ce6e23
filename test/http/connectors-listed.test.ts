/**
 * Short-form connectors (`kind: shell-hook`, `kind: file-drop`) are listed by `GET /subscriptions`
 * (walkthrough gap: their status and dead letters answered by name, yet the listing and so the
 * console never showed them) with their kind (`delivery.mode`, `connector: { kind, name }`),
 * answered by `GET /subscriptions/{name}` and the console's live tail, read-only (PATCH and DELETE
 * 409), and gone from the listing once stopped. A real gateway on the in-memory adapters, the
 * connectors started as `serve` starts them (startConnectors).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConnectors, startConnectors } from '../../src/connectors/index.js';
import type { ConnectorsHandle } from '../../src/connectors/index.js';
import type { Gateway } from '../../src/app/index.js';
import { startGateway } from '../helpers/gateway.js';
import { createLogger } from '../../src/observability/index.js';
import { tempDir, writeScript } from '../unit/connectors/helpers.js';
import { fetchJson } from './helpers.js';
import type { Answer } from './helpers.js';

let gw: Gateway;
let url: string;
let connectors: ConnectorsHandle;
const dir = tempDir('ceg-conn-listed-');

beforeAll(async () => {
  writeScript(dir.dir, 'hook.sh', 'exit 0');
  writeFileSync(join(dir.dir, 'price-hook.yaml'), 'kind: shell-hook\nsubscription: ops.price-hook\nkinds: [PriceLoadingCompleted]\nretry: { maxAttempts: 3 }\nsink: { command: [./hook.sh], timeoutMs: 7000 }\n');
  writeFileSync(join(dir.dir, 'price-drop.yaml'), `kind: file-drop\nsubscription: ops.price-drop\nkinds: [PriceLoadingCompleted]\nordering: none\nsink: { directory: ${join(dir.dir, 'drops')} }\n`);
  writeFileSync(join(dir.dir, 'off.yaml'), 'kind: file-drop\nenabled: false\nsubscription: ops.off\nkinds: [PriceLoadingCompleted]\nsink: { directory: off }\n');
  writeFileSync(join(dir.dir, 'drops-file.yaml'), 'kind: subscription\nname: drops\nowner: ops\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: file-drop, sink: { directory: out } }\n');
  const defs = loadConnectors(dir.dir, { environment: {} });
  ({ gateway: gw, url } = await startGateway({ stack: false, env: { INSTANCE_ID: 'mem-1' }, subscriptions: defs.flatMap((d) => (d.kind === 'subscription' ? [d.runtime] : [])) }));
  connectors = await startConnectors(gw, defs, createLogger({ level: 'silent' }));
});

afterAll(async () => {
  await connectors?.stop({ withinMs: 1000 });
  await gw?.close();
  dir.remove();
});

const call = (path: string, init: RequestInit = {}): Promise<Answer> => fetchJson(`${url}${path}`, init);
const items = async (): Promise<Record<string, unknown>[]> => (await call('/subscriptions')).body.items as Record<string, unknown>[];

describe('short-form connectors in GET /subscriptions', () => {
  it('lists the running shell hook and file drop with their kind, next to the subscription file (not the disabled one)', async () => {
    const listed = await items();
    expect(listed.map((i) => i.name)).toEqual(['drops', 'ops.price-drop', 'ops.price-hook']);
    expect(listed.find((i) => i.name === 'ops.price-hook')).toEqual({
      name: 'ops.price-hook',
      owner: 'anonymous',
      group: 'ops.price-hook',
      deadLetterTopic: 'ops.price-hook.dlq',
      kinds: ['PriceLoadingCompleted'],
      filters: [],
      start: 'latest',
      delivery: { mode: 'shell-hook' },
      ordering: 'key',
      retry: { maxAttempts: 3, backoff: { initialMs: 1000, factor: 2, maxMs: 60_000, jitter: 0.2 }, timeoutMs: 7000 },
      concurrency: 3,
      rateLimit: null,
      state: 'active',
      createdAt: '1970-01-01T00:00:00.000Z',
      updatedAt: '1970-01-01T00:00:00.000Z',
      generation: 1,
      origin: 'file',
      connector: { kind: 'shell-hook', name: 'price-hook' },
    });
    const drop = listed.find((i) => i.name === 'ops.price-drop')!;
    expect(drop).toMatchObject({ group: 'ops.price-drop', delivery: { mode: 'file-drop' }, ordering: 'none', origin: 'file', connector: { kind: 'file-drop', name: 'price-drop' } });
    expect(drop.retry).not.toHaveProperty('timeoutMs');
    // The subscription file's names its file too.
    expect(listed.find((i) => i.name === 'drops')).toMatchObject({ origin: 'file', connector: { kind: 'subscription', name: 'drops-file' } });
    // An admin's listing of the anonymous owner (the console's ?owner=) shows them the same way.
    expect((await call('/subscriptions?owner=anonymous')).body.items).toEqual(listed.filter((i) => i.owner === 'anonymous'));
  });

  it('answers GET by name, the status with the listing\'s fields and values, and refuses PATCH and DELETE (409: change the file)', async () => {
    const one = await call('/subscriptions/ops.price-hook');
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ name: 'ops.price-hook', connector: { kind: 'shell-hook' } });
    const st = await call('/subscriptions/ops.price-hook/status');
    // The listing's origin (`file`: a connector file defines it), not `library` as until 2026-12-07.
    expect(st.body).toMatchObject({ name: 'ops.price-hook', group: 'ops.price-hook', origin: 'file', state: 'active', running: true });
    const listed = (await items()).find((i) => i.name === 'ops.price-hook')!;
    expect({ name: st.body.name, group: st.body.group, origin: st.body.origin, state: st.body.state }).toEqual({ name: listed.name, group: listed.group, origin: listed.origin, state: listed.state });
    const patch = await call('/subscriptions/ops.price-hook', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: '{"state":"paused"}' });
    expect([patch.status, patch.body.code]).toEqual([409, 'CEG_CONFLICT']);
    const del = await call('/subscriptions/ops.price-drop', { method: 'DELETE' });
    expect([del.status, del.body.code]).toEqual([409, 'CEG_CONFLICT']);
    expect((await items()).map((i) => i.name)).toContain('ops.price-drop');
  });

  it('the console tails a connector (it reads the subscription by name for its kinds)', async () => {
    const ac = new AbortController();
    const res = await fetch(`${url}/console/api/tail/ops.price-hook?owner=anonymous`, { signal: ac.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    ac.abort();
    await res.body?.cancel().catch(() => undefined);
  });

  it('leaves the listing once the connectors stopped', async () => {
    await connectors.stop({ withinMs: 1000 });
    expect((await items()).map((i) => i.name)).toEqual(['drops']);
    expect((await call('/subscriptions/ops.price-hook')).status).toBe(404);
  });
});
