/**
 * Revoking a partner's `subscribe` permission applies to its existing subscriptions (adversarial
 * report F3), and an internal kind a partner may not read is answered as an unknown kind (F8).
 * In-memory adapters shared by successive gateways (one transport, one registry: the definitions
 * topic and the consumer groups' commits survive a restart), each started with a partners file:
 * 1. `acme` may read PriceLoadingCompleted and StrategySignal; it has a push and a pull
 *    subscription on both, and one of each on StrategySignal only.
 * 2. StrategySignal is taken out of its `subscribe`, the gateway restarts: both subscriptions
 *    deliver only prices, the StrategySignal-only ones deliver nothing (no member, pull 403), GET
 *    and status name the kind and why, a PATCH keeping it is 403 (naming it), one removing it is 200.
 * 3. The permission comes back: the signals published meanwhile are delivered then (held, not skipped).
 * An unordered (`ordering: none`) push subscription of prices and IndicatorsComputed (revoked with
 * StrategySignal) has an event its sink refused waiting on its retry topic when the permission goes:
 * the narrowed member dead-letters it with its original topic, partition and offset and the reason
 * (not as a forged retry record with the retry topic as its source); the listing shows it without
 * its data and a redrive skips it (left unmarked) while the permission is revoked; once it is back,
 * a redrive delivers it.
 * Operators see it on /metrics: `ce_gateway_subscription_forbidden_kinds{subscription=<group>}` is the
 * number of such kinds while there are some, and no series otherwise (/readyz stays ready).
 * See docs/security.md "Revoking a permission".
 */
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryRegistry } from '../../src/registry/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { SchemaRegistry } from '../../src/registry/port.js';
import type { Transport, TransportRecord } from '../../src/transport/port.js';
import { deadLetterTopic, redriveTopic, retryTopic } from '../../src/bus/subscriber/index.js';
import { deadLetterHeaders } from '../../src/bus/subscriber/failure-headers.js';
import { indicatorsComputed, priceLoaded, strategySignal, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { sha256 } from '../helpers/partners.js';
import { startSink } from '../helpers/sink.js';
import { acceptAll } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';
import { waitFor } from '../helpers/wait.js';
import { BATCH } from './helpers.js';

const SIGNAL = 'b785f117-3e61-4864-89c3-4accf13140c2';
const INDICATORS = 'f2e400e1-d640-4b6f-9121-35eaf50d8094';
/** What acme may read with every permission, and once StrategySignal and IndicatorsComputed are revoked. */
const ALL_READS = ['PriceLoadingCompleted', 'StrategySignal', 'IndicatorsComputed'];
const REVOKED_READS = ['PriceLoadingCompleted'];
const keys = { acme: randomUUID(), pub: randomUUID(), ops: randomUUID() };

let catalog: { dir: string; cleanup: () => void };
let partnersFile: string;
let transport: Transport;
let registry: SchemaRegistry;
let gw: TestGateway | undefined;
let sink: TestSink;

/** Writes the partners file: acme reads `acmeReads` and may redrive; pub publishes everything; ops is an admin. */
function writePartners(acmeReads: readonly string[]): void {
  writeFileSync(
    partnersFile,
    `partners:
  - id: acme
    keys: [{ sha256: ${sha256(keys.acme)} }]
    subscribe: [${acmeReads.join(', ')}]
    permissions: [redrive]
  - id: pub
    keys: [{ sha256: ${sha256(keys.pub)} }]
    sources: ["urn:partner:pub"]
    publish: ["*"]
  - id: ops
    keys: [{ sha256: ${sha256(keys.ops)} }]
    subscribe: ["*", SeriesUpdateCompleted]
    roles: [admin]
`,
  );
}

/** (Re)starts the gateway on the shared adapters with the partners file as it is now. */
async function restart(): Promise<void> {
  await gw?.close();
  gw = await startGateway({ stack: false, env: { PARTNERS_FILE: partnersFile, CATALOG_DIR: catalog.dir, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTION_CHECK_INTERVAL_MS: '100' }, overrides: { transport, registry } });
  await gw.gateway.subscriptionsLoaded();
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown> & unknown[];
  readonly text: string;
}

async function call(key: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${gw!.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: (text === '' ? {} : JSON.parse(text)) as Answer['body'] };
}

/** Publishes one price and one signal as `pub`; resolves with their ids. */
async function publishBoth(): Promise<{ price: string; signal: string }> {
  const signal = { specversion: '1.0', id: randomUUID(), source: 'urn:partner:pub', type: SIGNAL, time: '2022-03-15T12:00:05.000Z', datacontenttype: 'application/json', data: strategySignal() };
  const price = structuredPriceEvent({ source: 'urn:partner:pub' }, priceLoaded('EUR/USD', 'H1', String(Date.now()).slice(-8)));
  // The signal first: when the price has arrived, a signal that was going to come had every chance to.
  const r = await fetch(`${gw!.url}/events`, { method: 'POST', headers: { authorization: `Bearer ${keys.pub}`, 'content-type': BATCH }, body: JSON.stringify([signal, price]) });
  expect(r.status, await r.text()).toBe(202);
  return { price: price.id as string, signal: signal.id };
}

/** Ids and types the sink received for subscription paths `path`. */
const pushed = (path: string): { id: string; type: string }[] =>
  sink.deliveries().filter((d) => d.path === path).map((d) => ({ id: String(d.headers['ce-id']), type: String(d.headers['ce-type']) }));

async function pullAll(name: string, wait = '0.5'): Promise<{ ids: string[]; types: string[]; cursor: string }> {
  const r = await call(keys.acme, 'GET', `/subscriptions/${name}/events?max=100&wait=${wait}`);
  expect(r.status, r.text).toBe(200);
  const events = r.body as unknown as { id: string; type: string }[];
  return { ids: events.map((e) => e.id), types: events.map((e) => e.type), cursor: r.headers.get('ce-gateway-cursor')! };
}

/** `ce_gateway_subscription_forbidden_kinds` as `GET /metrics` (an admin's key) shows it: value by `subscription` label. */
async function forbiddenGauge(): Promise<Record<string, number>> {
  const res = await fetch(`${gw!.url}/metrics`, { headers: { authorization: `Bearer ${keys.ops}` } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(text).toContain('# TYPE ce_gateway_subscription_forbidden_kinds gauge');
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^ce_gateway_subscription_forbidden_kinds\{subscription="([^"]*)"\} (\S+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** A subscription's group (the `subscription` label of its metrics). */
const groupOf = async (name: string): Promise<string> => String((await call(keys.acme, 'GET', `/subscriptions/${name}`)).body.group);

const run = randomUUID().slice(0, 6);
const names = { push: `rp-push-${run}`, pull: `rp-pull-${run}`, pushSignal: `rp-pushsig-${run}`, pullSignal: `rp-pullsig-${run}`, pushNone: `rp-none-${run}` };
let before: { price: string; signal: string };
let during: { price: string; signal: string };
/** The id of the IndicatorsComputed event `names.pushNone`'s sink refused: it waits on its retry topic. */
let parked: string;
/** While true the sink answers 500 to IndicatorsComputed events pushed to `names.pushNone` (retried through its retry topic). */
let refuseIndicators = true;

/** A push delivery to the sink, at path `/<name>`. */
const hook = (p: string): Record<string, unknown> => ({ mode: 'push', url: sink.url.replace('/hook', `/${p}`) });

/** The dead letters of `name` as its owner lists them. */
async function deadLettersOf(name: string): Promise<{ id: string; reason: string; coordinates: { topic: string } | null; event: unknown; eventProblem?: string; redrivenAt: string | null }[]> {
  const r = await call(keys.acme, 'GET', `/subscriptions/${name}/deadletters`);
  expect(r.status, r.text).toBe(200);
  return r.body.items as never;
}

beforeAll(async () => {
  catalog = catalogWithOwnTopics(`revk${run}`);
  const catalogFile = join(catalog.dir, 'catalog.yaml');
  const text = readFileSync(catalogFile, 'utf8').replace(/(name: SeriesUpdateCompleted[\s\S]*?publish: true\n)/, '$1    internal: true\n');
  if (!text.includes('internal: true')) throw new Error('could not mark a kind internal');
  writeFileSync(catalogFile, text);
  partnersFile = join(catalog.dir, 'partners.yaml');
  transport = createMemoryTransport();
  registry = createMemoryRegistry();
  sink = await startSink((req, n) => (refuseIndicators && req.method === 'POST' && req.path === `/${names.pushNone}` && req.headers['ce-type'] === INDICATORS ? { status: 500, body: 'not now' } : acceptAll(req, n)));
  writePartners(ALL_READS);
  await restart();
});

afterAll(async () => {
  await gw?.close();
  await transport?.close();
  await sink?.close();
  catalog?.cleanup();
  rmSync(partnersFile, { force: true });
});

describe('revoking a subscribe permission applies to existing subscriptions', () => {
  it('with the permission: push and pull deliver both kinds', async () => {
    for (const [name, kinds, delivery] of [
      [names.push, ['PriceLoadingCompleted', 'StrategySignal'], hook(names.push)],
      [names.pull, ['PriceLoadingCompleted', 'StrategySignal'], { mode: 'pull' }],
      [names.pushSignal, ['StrategySignal'], hook(names.pushSignal)],
      [names.pullSignal, ['StrategySignal'], { mode: 'pull' }],
    ] as const) {
      const r = await call(keys.acme, 'POST', '/subscriptions', { name, kinds, delivery });
      expect(r.status, r.text).toBe(201);
      expect(r.body.forbiddenKinds).toBeUndefined();
    }
    before = await publishBoth();
    await waitFor('push of both kinds', () => pushed(`/${names.push}`).length >= 2 && pushed(`/${names.pushSignal}`).length >= 1);
    expect(pushed(`/${names.push}`).map((e) => e.id).sort()).toEqual([before.price, before.signal].sort());
    const p = await pullAll(names.pull);
    expect(p.ids.sort()).toEqual([before.price, before.signal].sort());
    expect((await call(keys.acme, 'POST', `/subscriptions/${names.pull}/cursors`, { cursor: p.cursor })).status).toBe(204);
    const ps = await pullAll(names.pullSignal);
    expect(ps.ids).toEqual([before.signal]);
    expect((await call(keys.acme, 'POST', `/subscriptions/${names.pullSignal}/cursors`, { cursor: ps.cursor })).status).toBe(204);
  });

  it('with the permission: an unordered subscription parks an event its sink refuses on its retry topic', async () => {
    const r = await call(keys.acme, 'POST', '/subscriptions', {
      name: names.pushNone,
      kinds: ['PriceLoadingCompleted', 'IndicatorsComputed'],
      delivery: hook(names.pushNone),
      ordering: 'none',
      retry: { maxAttempts: 50, backoff: { initialMs: 1500, factor: 1, maxMs: 1500, jitter: 0 } },
    });
    expect(r.status, r.text).toBe(201);
    parked = randomUUID();
    const event = { specversion: '1.0', id: parked, source: 'urn:partner:pub', type: INDICATORS, time: '2022-03-15T12:00:05.000Z', datacontenttype: 'application/json', data: indicatorsComputed() };
    const posted = await fetch(`${gw!.url}/events`, { method: 'POST', headers: { authorization: `Bearer ${keys.pub}`, 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
    expect(posted.status, await posted.text()).toBe(202);
    await waitFor('the event refused by the sink', () => pushed(`/${names.pushNone}`).some((e) => e.id === parked));
    const retries = retryTopic(await groupOf(names.pushNone));
    await waitFor('the event on the retry topic', async () => (await transport.endOffsets(retries)).some((p) => p.offset > 0n));
  });

  it('revoked and restarted: only the kind still permitted is delivered, by push and by pull', async () => {
    writePartners(REVOKED_READS);
    await restart();
    during = await publishBoth();
    await waitFor('the price pushed after the restart', () => pushed(`/${names.push}`).some((e) => e.id === during.price));
    const p = await pullAll(names.pull, '1');
    expect(p.ids).toEqual([during.price]);
    expect((await call(keys.acme, 'POST', `/subscriptions/${names.pull}/cursors`, { cursor: p.cursor })).status).toBe(204);
    // A pull with the cursor sees nothing more: the signal is not there to take.
    expect((await call(keys.acme, 'GET', `/subscriptions/${names.pull}/events?wait=0.3&cursor=${encodeURIComponent(p.cursor)}`)).body).toEqual([]);
    await new Promise((r) => setTimeout(r, 1000));
    expect(pushed(`/${names.push}`).map((e) => e.id)).not.toContain(during.signal);
    expect(pushed(`/${names.pushSignal}`).map((e) => e.id)).not.toContain(during.signal);
    expect(pushed(`/${names.push}`).filter((e) => e.type === SIGNAL)).toHaveLength(1); // the one from before the revocation
  });

  it('a subscription of revoked kinds only: no member, pull 403, console tail 403', async () => {
    const pull = await call(keys.acme, 'GET', `/subscriptions/${names.pullSignal}/events?wait=0.2`);
    expect(pull.status, pull.text).toBe(403);
    expect(pull.body.permission).toBe('subscribe');
    expect(pull.text).toContain('StrategySignal');
    const commit = await call(keys.acme, 'POST', `/subscriptions/${names.pullSignal}/cursors`, { cursor: 'c1.x' });
    expect(commit.status).toBe(403);
    const tail = await fetch(`${gw!.url}/console/api/tail/${names.pushSignal}`, { headers: { authorization: `Bearer ${keys.acme}` } });
    expect(tail.status).toBe(403);
    await tail.body?.cancel();
    const st = await call(keys.acme, 'GET', `/subscriptions/${names.pushSignal}/status`);
    expect(st.status, st.text).toBe(200);
    expect(st.body.running).toBe(false);
    expect(st.body.forbiddenKinds).toEqual(['StrategySignal']);
    expect(st.body.forbiddenReason).toContain('nothing is delivered');
  });

  it('the console tail of a subscription shows only the kinds its owner may still read', async () => {
    const ac = new AbortController();
    const res = await fetch(`${gw!.url}/console/api/tail/${names.push}`, { headers: { authorization: `Bearer ${keys.acme}` }, signal: ac.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let text = '';
    const ids = await publishBoth();
    const deadline = Date.now() + 10_000;
    while (!text.includes(ids.price) && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
    ac.abort();
    expect(text).toContain(ids.price);
    expect(text).not.toContain(ids.signal);
  });

  it('GET and status name the kinds the owner may no longer read, and why', async () => {
    for (const name of [names.push, names.pull]) {
      const g = await call(keys.acme, 'GET', `/subscriptions/${name}`);
      expect(g.body.kinds).toEqual(['PriceLoadingCompleted', 'StrategySignal']); // the definition is untouched
      expect(g.body.state).toBe('active');
      expect(g.body.forbiddenKinds).toEqual(['StrategySignal']);
      expect(g.body.forbiddenReason).toMatch(/^owner acme may no longer read StrategySignal \(subscribe permission\): not delivered/);
      const st = await call(keys.acme, 'GET', `/subscriptions/${name}/status`);
      expect(st.body.forbiddenKinds).toEqual(['StrategySignal']);
    }
    const list = await call(keys.acme, 'GET', '/subscriptions');
    expect((list.body.items as { name: string; forbiddenKinds?: string[] }[]).find((v) => v.name === names.push)?.forbiddenKinds).toEqual(['StrategySignal']);
    // The admin sees the same on acme's subscription.
    expect((await call(keys.ops, 'GET', `/subscriptions/${names.push}?owner=acme`)).body.forbiddenKinds).toEqual(['StrategySignal']);
  });

  it('/metrics: ce_gateway_subscription_forbidden_kinds counts the kinds each narrowed subscription\'s owner may not read; a normal one has no series; /readyz stays ready', async () => {
    const normal = `rp-price-${run}`;
    const created = await call(keys.acme, 'POST', '/subscriptions', { name: normal, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
    expect(created.status, created.text).toBe(201);
    const gauge = await forbiddenGauge();
    // One of two kinds (push and pull alike), and the one kind of the StrategySignal-only ones.
    for (const name of [names.push, names.pull, names.pushSignal, names.pullSignal, names.pushNone]) expect(gauge[await groupOf(name)], name).toBe(1);
    expect(gauge[await groupOf(normal)]).toBeUndefined();
    expect(Object.keys(gauge)).toHaveLength(5);
    // A permission decision, not a failure of this instance: still ready.
    expect((await fetch(`${gw!.url}/readyz`)).status).toBe(200);
    expect((await call(keys.acme, 'DELETE', `/subscriptions/${normal}`)).status).toBe(204);
  });

  it('the dead-letter listing does not show the data of a kind the owner may no longer read; other kinds as before', async () => {
    // Dead letters of both kinds on the push subscription's dead-letter topic, as its member writes them.
    const group = await groupOf(names.push);
    const topicOf = (name: string): string => gw!.gateway.catalog.byName(name)!.topic.name;
    const firstOf = async (topic: string): Promise<TransportRecord> => {
      let got: TransportRecord | undefined;
      const r = await transport.read({ topics: [topic], from: { kind: 'earliest' } }, (rec) => {
        got ??= rec;
        return Promise.resolve();
      });
      await waitFor(`a record on ${topic}`, () => got !== undefined);
      await r.stop();
      return got!;
    };
    const records = [await firstOf(topicOf('StrategySignal')), await firstOf(topicOf('PriceLoadingCompleted'))];
    await transport.produce(
      deadLetterTopic(group),
      records.map((r) => ({ key: r.key, value: r.value, headers: [...r.headers, ...deadLetterHeaders({ reason: 'sink answered 500', attempts: 3, firstFailureMs: Date.now(), lastFailureMs: Date.now(), origin: { topic: r.topic, partition: r.partition, offset: r.offset }, subscription: group })] })),
    );
    const list = await call(keys.acme, 'GET', `/subscriptions/${names.push}/deadletters`);
    expect(list.status, list.text).toBe(200);
    const items = list.body.items as { type: string; event: Record<string, unknown> | null; eventProblem?: string }[];
    const signal = items.find((i) => i.type === SIGNAL)!;
    expect(signal.event).toBeNull();
    expect(signal.eventProblem).toContain('may no longer read StrategySignal');
    const price = items.find((i) => i.type !== SIGNAL)!;
    expect(price.event).not.toBeNull();
    expect(price.eventProblem).toBeUndefined();
  });

  it("a retry in flight of the revoked kind is dead-lettered with its original position and the reason; listed without its data; a redrive skips it, unmarked", async () => {
    const indicatorsTopic = gw!.gateway.catalog.byName('IndicatorsComputed')!.topic.name;
    // The narrowed member reads the retry topic still: once due, the refused event is dead-lettered, not delivered.
    const dead = await waitFor('the parked event dead-lettered', async () => (await deadLettersOf(names.pushNone)).find((i) => i.id === parked), 15_000);
    expect(dead.reason).toContain('not delivered: the subscription\'s owner may no longer read IndicatorsComputed');
    // Where the event was first read (its kind's topic), not the retry topic: a later redrive accepts it.
    expect(dead.coordinates?.topic).toBe(indicatorsTopic);
    expect(dead.event).toBeNull();
    expect(dead.eventProblem).toContain('may no longer read IndicatorsComputed');
    for (const sel of [{ all: true }, { ids: [parked] }]) {
      const r = await call(keys.acme, 'POST', `/subscriptions/${names.pushNone}/deadletters/redrive`, sel);
      expect(r.status, r.text).toBe(200);
      expect(r.body.redriven).toBe(0);
      expect(r.body.notFound).toEqual([]);
      const skipped = r.body.skipped as { id: string; reason: string }[];
      expect(skipped.find((x) => x.id === parked)?.reason, r.text).toContain('not redriven: the subscription\'s owner may no longer read IndicatorsComputed');
    }
    // Left as it was: not marked redriven, nothing went back to the subscription.
    expect((await deadLettersOf(names.pushNone)).find((i) => i.id === parked)?.redrivenAt).toBeNull();
    expect((await transport.endOffsets(redriveTopic(await groupOf(names.pushNone)))).every((p) => p.offset === 0n)).toBe(true);
  }, 30_000);

  it('a PATCH keeping a revoked kind is 403 naming it, for the owner and an admin; new subscriptions on it are 403', async () => {
    for (const [name, patch] of [[names.push, { filters: [] }], [names.pull, { state: 'paused' }], [names.pull, { kinds: ['StrategySignal', 'PriceLoadingCompleted'] }]] as const) {
      const r = await call(keys.acme, 'PATCH', `/subscriptions/${name}`, patch);
      expect(r.status, r.text).toBe(403);
      expect(r.body.code).toBe('CEG_FORBIDDEN');
      expect(r.body.permission).toBe('subscribe');
      expect(r.text).toContain('StrategySignal');
    }
    const admin = await call(keys.ops, 'PATCH', `/subscriptions/${names.push}?owner=acme`, { filters: [] });
    expect(admin.status, admin.text).toBe(403);
    expect(admin.body.detail).toContain('owner acme may not read StrategySignal');
    expect((await call(keys.acme, 'GET', `/subscriptions/${names.push}`)).body.generation).toBe(1);
    const created = await call(keys.acme, 'POST', '/subscriptions', { name: `rp-new-${run}`, kinds: ['StrategySignal'], delivery: { mode: 'pull' } });
    expect(created.status).toBe(403);
    // An admin creating for acme is held to acme's permission, not its own.
    const forAcme = await call(keys.ops, 'POST', '/subscriptions?owner=acme', { name: `rp-admin-${run}`, kinds: ['PriceLoadingCompleted', 'StrategySignal'], delivery: { mode: 'pull' } });
    expect(forAcme.status, forAcme.text).toBe(403);
    expect(forAcme.body).toMatchObject({ code: 'CEG_FORBIDDEN', permission: 'subscribe' });
    expect(forAcme.body.detail).toContain('partner acme may not subscribe to StrategySignal');
    expect((await call(keys.ops, 'GET', `/subscriptions/rp-admin-${run}?owner=acme`)).status).toBe(404);
  });

  it('the permission comes back: what was published meanwhile is delivered then (held, not skipped)', async () => {
    writePartners(ALL_READS);
    await restart();
    await waitFor('the held signal pushed', () => pushed(`/${names.push}`).some((e) => e.id === during.signal) && pushed(`/${names.pushSignal}`).some((e) => e.id === during.signal));
    expect((await call(keys.acme, 'GET', `/subscriptions/${names.push}`)).body.forbiddenKinds).toBeUndefined();
    expect(await forbiddenGauge()).toEqual({});
    // The signals held since the revocation come first; the prices committed meanwhile do not come again.
    const p = await pullAll(names.pull);
    expect(p.ids).toContain(during.signal);
    expect(p.ids).not.toContain(during.price);
    expect(p.ids).not.toContain(before.signal);
    const ps = await pullAll(names.pullSignal);
    expect(ps.ids).toContain(during.signal);
    expect(ps.ids).not.toContain(before.signal);
  });

  it("the permission back: the revoked kind's dead-lettered retry is redriven and delivered", async () => {
    refuseIndicators = false;
    const times = (): number => pushed(`/${names.pushNone}`).filter((e) => e.id === parked).length;
    const n = times();
    const r = await call(keys.acme, 'POST', `/subscriptions/${names.pushNone}/deadletters/redrive`, { ids: [parked] });
    expect(r.status, r.text).toBe(200);
    expect(r.body.redriven, r.text).toBe(1);
    await waitFor('the redriven event pushed', () => times() > n);
    const dead = (await deadLettersOf(names.pushNone)).filter((i) => i.id === parked);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.redrivenAt).not.toBeNull();
    expect(dead[0]!.event).not.toBeNull(); // the owner may read it again
  });

  it('a PATCH removing the revoked kind repairs the subscription', async () => {
    writePartners(REVOKED_READS);
    await restart();
    const r = await call(keys.acme, 'PATCH', `/subscriptions/${names.push}`, { kinds: ['PriceLoadingCompleted'] });
    expect(r.status, r.text).toBe(200);
    expect(r.body.kinds).toEqual(['PriceLoadingCompleted']);
    expect(r.body.forbiddenKinds).toBeUndefined();
    expect((await call(keys.acme, 'PATCH', `/subscriptions/${names.push}`, { filters: [] })).status).toBe(200);
    // The repaired subscription's series is gone at the next scrape; the others' stay.
    const gauge = await forbiddenGauge();
    expect(gauge[await groupOf(names.push)]).toBeUndefined();
    expect(gauge[await groupOf(names.pull)]).toBe(1);
    // Its dead letters of the kind its owner still may not read stay without their data, though the
    // kind is no longer one of its kinds (same group, same dead-letter topic).
    const list = await call(keys.acme, 'GET', `/subscriptions/${names.push}/deadletters`);
    expect(list.status, list.text).toBe(200);
    const signals = (list.body.items as { type: string; event: unknown; eventProblem?: string }[]).filter((i) => i.type === SIGNAL);
    expect(signals.length).toBeGreaterThan(0);
    for (const i of signals) {
      expect(i.event).toBeNull();
      expect(i.eventProblem).toContain('StrategySignal');
    }
  });
});

describe('internal kinds are not confirmed by name (F8)', () => {
  it('a partner that may not read an internal kind gets the answer of an unknown kind; a public kind it lacks stays 403', async () => {
    const ask = (key: string, kinds: string[]): Promise<Answer> => call(key, 'POST', '/subscriptions', { name: `rp-int-${randomUUID().slice(0, 6)}`, kinds, delivery: { mode: 'pull' } });
    const internal = await ask(keys.acme, ['SeriesUpdateCompleted']);
    const unknown = await ask(keys.acme, ['NoSuchKindAtAll']);
    expect(internal.status, internal.text).toBe(400);
    expect(unknown.status, unknown.text).toBe(400);
    const shape = (a: Answer, name: string): unknown => JSON.parse(a.text.split(name).join('<kind>')) as unknown;
    const strip = (v: unknown): unknown => ({ ...(v as Record<string, unknown>), instance: undefined, traceId: undefined });
    expect(strip(shape(internal, 'SeriesUpdateCompleted'))).toEqual(strip(shape(unknown, 'NoSuchKindAtAll')));
    expect(internal.body.code).toBe('CEG_INVALID_SUBSCRIPTION');
    expect(internal.text).toContain('unknown event kind \\"SeriesUpdateCompleted\\"');
    // By eventId too, and in a PATCH.
    expect((await ask(keys.acme, ['d6b5e2f6-5144-43bb-a2ec-5317301b7208'])).status).toBe(400);
    const own = await ask(keys.acme, ['PriceLoadingCompleted']);
    expect(own.status, own.text).toBe(201);
    const patch = await call(keys.acme, 'PATCH', `/subscriptions/${String(own.body.name)}`, { kinds: ['PriceLoadingCompleted', 'SeriesUpdateCompleted'] });
    expect(patch.status).toBe(400);
    expect(patch.text).toContain('unknown event kind');
    // A public kind outside its subscribe: 403 as before.
    const pub = await ask(keys.acme, ['StrategySignal']);
    expect(pub.status).toBe(403);
    expect(pub.body.permission).toBe('subscribe');
    // An admin sees internal kinds: one it may not read is a 403 naming it; one it may, a 201.
    expect((await ask(keys.ops, ['SeriesUpdateCompleted'])).status).toBe(201);
  });
});
