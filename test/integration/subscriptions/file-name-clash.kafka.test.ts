/**
 * Two subscriptions of one name (defect D8), on the real stack with a catalog and definitions topic
 * of this run's own: subscriptions stored over HTTP (owner `anonymous`, a gateway without
 * authentication) exist before connector files declare subscriptions of the same names (owner
 * `connectors`). The rule (docs/subscriptions.md "Subscriptions in connector files"): the file's
 * wins and the conflict is surfaced —
 * - at start-up one warn line per clash names the subscription and both owners and groups;
 * - the stored one is not run (its group gets no member; a replay of it is refused 409; a stored pull one is refused 409 naming
 *   `name`), and `GET /subscriptions/{name}`, the list and `…/status` mark it `shadowedBy` the file's;
 * - the file's subscription runs (its file drop gets the event);
 * - `POST /subscriptions` of a name a file declares is 409 problem+json naming `name`;
 * - deleting the stored one resolves it: the name then addresses the file's.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app/index.js';
import type { Gateway } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { loadConnectors } from '../../../src/connectors/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../../fixtures/events.js';
import { acceptAll, startSink } from '../../helpers/sink.js';
import type { TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ownCatalog, rawKafka } from '../consumer/members.js';
import type { OwnCatalog } from '../consumer/members.js';

let cat: OwnCatalog;
let sink: TestSink;
let dir: string;
const subscriptionsTopic = `${uniqueName('it-clash')}.subscriptions`;
const name = (what: string): string => uniqueName(`clash-${what}`).replace(/\./g, '-');
const PUSHED = name('push');
const PULLED = name('pull');
const FILE_ONLY = name('file');
const gateways: Gateway[] = [];
const lines: Record<string, unknown>[] = [];

interface Answer {
  status: number;
  type: string;
  body: Record<string, unknown>;
}

async function call(url: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${url}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** A gateway on this run's catalog and definitions topic, logging into `lines` when `logged`; its URL. */
async function start(id: string, files: boolean, logged: boolean): Promise<{ gw: Gateway; url: string }> {
  const out = new PassThrough();
  out.on('data', (c: Buffer) => {
    for (const l of c.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
  });
  const config = loadConfig({ ...cat.env(), PORT: '0', HOST: '127.0.0.1', INSTANCE_ID: id, SUBSCRIPTIONS_TOPIC: subscriptionsTopic, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTION_IDLE_STOP_MS: '0', LOG_LEVEL: 'info' });
  const gw = createGateway(config, logged ? createLogger({ level: 'info', destination: out }) : createLogger({ level: 'silent', destination: process.stderr }));
  gateways.push(gw);
  if (files) gw.declareSubscriptions(loadConnectors(dir, { environment: {} }).flatMap((d) => (d.kind === 'subscription' ? [d.runtime] : [])));
  const url = `http://127.0.0.1:${(await gw.listen()).port}`;
  await gw.ready;
  await gw.subscriptionsLoaded();
  return { gw, url };
}

let url: string;

beforeAll(async () => {
  cat = ownCatalog('it-clash');
  dir = mkdtempSync(join(tmpdir(), 'ceg-clash-'));
  sink = await startSink((req) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : { status: 200 }));
  // First the HTTP subscriptions, on a gateway without connector files…
  const first = await start('it-clash-1', false, false);
  expect((await call(first.url, 'POST', '/subscriptions', { name: PUSHED, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: sink.url } })).status).toBe(201);
  expect((await call(first.url, 'POST', '/subscriptions', { name: PULLED, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } })).status).toBe(201);
  await first.gw.close();
  // …then connector files declaring the same names (owner `connectors`), and a gateway with them.
  for (const n of [PUSHED, PULLED, FILE_ONLY]) {
    writeFileSync(join(dir, `${n}.yaml`), `kind: subscription\nname: ${n}\nkinds: [PriceLoadingCompleted]\ndelivery: { mode: file-drop, sink: { directory: out-${n} } }\n`);
  }
  url = (await start('it-clash-2', true, true)).url;
}, 120_000);

afterAll(async () => {
  // The stored ones, if the test stopped before deleting them.
  if (url !== undefined) for (const n of [PUSHED, PULLED]) await call(url, 'DELETE', `/subscriptions/${n}`).catch(() => undefined);
  await Promise.allSettled(gateways.map((g) => g.close()));
  await sink?.close();
  await cat?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('a connector file declaring the name of a stored HTTP subscription of another owner', () => {
  it('the file wins: the stored one is not run, the clash is logged once naming both owners and marked in GET, the list and the status; POST of a file name is 409', async () => {
    const fileGroup = (n: string): string => `ce-gateway.sub.connectors.${n}`;
    const storedGroup = (n: string): string => `ce-gateway.sub.anonymous.${n}`;

    // One warn line per clash, naming both owners and groups.
    for (const n of [PUSHED, PULLED]) {
      const warned = lines.filter((l) => l.level === 40 && l.name === n);
      expect(warned, n).toHaveLength(1);
      expect(warned[0], n).toMatchObject({ subscription: storedGroup(n), owner: 'anonymous', fileOwner: 'connectors', fileGroup: fileGroup(n) });
      expect(String(warned[0]!.msg), n).toContain('owner connectors');
      expect(String(warned[0]!.msg), n).toContain('owner anonymous');
    }

    // GET by name answers the stored one (the caller's own), marked.
    const got = await call(url, 'GET', `/subscriptions/${PUSHED}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ name: PUSHED, owner: 'anonymous', origin: 'api', shadowedBy: { name: PUSHED, owner: 'connectors', group: fileGroup(PUSHED) } });
    // The list shows both, the stored one marked, the file's not.
    const items = ((await call(url, 'GET', '/subscriptions')).body.items as Record<string, unknown>[]).filter((i) => i.name === PUSHED);
    expect(items.map((i) => i.origin).sort()).toEqual(['api', 'file']);
    expect(items.find((i) => i.origin === 'api')).toHaveProperty('shadowedBy.owner', 'connectors');
    expect(items.find((i) => i.origin === 'file')).not.toHaveProperty('shadowedBy');
    // The status says it is not run, and why.
    const status = await call(url, 'GET', `/subscriptions/${PUSHED}/status`);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ group: storedGroup(PUSHED), running: false, shadowedBy: { owner: 'connectors', group: fileGroup(PUSHED) } });

    // A stored pull subscription shadowed so is not pulled.
    const pulled = await call(url, 'GET', `/subscriptions/${PULLED}/events?wait=0`);
    expect(pulled.status).toBe(409);
    expect(pulled.type).toMatch(/^application\/problem\+json/);
    expect(pulled.body).toMatchObject({ code: 'CEG_CONFLICT', violations: [{ field: 'name' }] });
    expect(String(pulled.body.detail)).toContain('owner connectors');

    // Nor replayed (dry run or not): it is not run, so moving its offsets would reach no sink.
    for (const dryRun of [true, false]) {
      const replayed = await call(url, 'POST', `/subscriptions/${PUSHED}/replay`, { to: 'earliest', dryRun });
      expect(replayed.status, `dryRun ${dryRun}`).toBe(409);
      expect(replayed.type).toMatch(/^application\/problem\+json/);
      expect(replayed.body).toMatchObject({ code: 'CEG_CONFLICT', violations: [{ field: 'name' }] });
      expect(String(replayed.body.detail)).toContain('owner connectors');
    }
    expect((await call(url, 'GET', `/subscriptions/${PUSHED}/replays`)).body).toEqual([]);

    // A name a file declares cannot be created over HTTP.
    for (const n of [FILE_ONLY, PUSHED]) {
      const created = await call(url, 'POST', '/subscriptions', { name: n, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
      expect(created.status, n).toBe(409);
      expect(created.type, n).toMatch(/^application\/problem\+json/);
      expect(created.body, n).toMatchObject({ code: 'CEG_CONFLICT', violations: [{ field: 'name' }] });
      expect(String(created.body.detail), n).toContain('connector file');
    }

    // The file's runs; the stored one's group never got a member here.
    const event = { specversion: '1.0', id: randomUUID(), source: 'urn:partner:it-clash', type: PRICE_LOADING_COMPLETED, time: '2026-12-01T10:00:00.000Z', data: priceLoaded('CLASH/USD', 'H1', '26120110') };
    const res = await fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify([event]) });
    expect(res.status, await res.text()).toBe(202);
    await waitFor('the file subscription drops the event', () => readdirSync(join(dir, `out-${PUSHED}`)).length >= 1, 30_000, 200);
    const admin = rawKafka().admin();
    await admin.connect();
    try {
      expect((await admin.describeGroups([storedGroup(PUSHED)])).groups[0]?.members ?? []).toHaveLength(0);
    } finally {
      await admin.disconnect();
    }
    expect(sink.deliveries().filter((r) => r.method === 'POST')).toHaveLength(0);
    // The lag gauge (docs/observability.md) has the files' subscriptions, not the stored ones they
    // shadow: those are not run, so their backlog is nobody's to alert on.
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const lagOf = (group: string): string[] => metrics.split('\n').filter((l) => l.startsWith('ce_gateway_subscription_lag{') && l.includes(`subscription="${group}"`));
    for (const n of [PUSHED, PULLED, FILE_ONLY]) expect(lagOf(fileGroup(n)).length, n).toBeGreaterThan(0);
    for (const n of [PUSHED, PULLED]) expect(lagOf(storedGroup(n)), n).toEqual([]);

    // Deleting the stored ones resolves the clash: the name then addresses the file's.
    for (const n of [PUSHED, PULLED]) expect((await call(url, 'DELETE', `/subscriptions/${n}`)).status, n).toBe(204);
    await waitFor('the stored subscription gone', async () => (await call(url, 'GET', `/subscriptions/${PUSHED}`)).body.origin === 'file', 30_000, 200);
    const after = await call(url, 'GET', `/subscriptions/${PUSHED}/status`);
    expect(after.body).toMatchObject({ group: fileGroup(PUSHED), origin: 'file' });
    expect(after.body).not.toHaveProperty('shadowedBy');
  });
});
