/**
 * Subscriptions beyond the HTTP resource, on the in-memory adapters: connector files of
 * `kind: subscription` (git-ops: push with secrets from the environment, and a file-drop sink),
 * listed by GET as read-only; unordered delivery through the retry topic; secrets and sink headers
 * never in the logs; and the rule for the key sealing secrets.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { loadConnectors } from '../../src/connectors/index.js';
import { SubscriptionService, SubscriptionStore, secretsKeyDecision } from '../../src/bus/subscriptions/index.js';
import { loadCatalog } from '../../src/catalog/index.js';
import { toProblem } from '../../src/codec/http/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import { createLogger, silentLogger } from '../../src/observability/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { caughtAsync } from '../helpers/errors.js';
import { acceptAll, startSink } from '../helpers/sink.js';
import type { TestSink } from '../helpers/sink.js';
import { waitFor } from '../helpers/wait.js';
import { tempDir } from '../unit/connectors/helpers.js';
import { post, readTopic } from './helpers.js';
import { listening } from '../helpers/gateway.js';

const FILE_SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const FILE_TOKEN = `file-token-${randomUUID()}`;
let gw: Gateway;
let url: string;
let hook: TestSink;
let flaky: TestSink;
const logs: string[] = [];
const dir = tempDir('ceg-subs-files-');

beforeAll(async () => {
  hook = await startSink();
  flaky = await startSink((req, nth) => (req.method === 'OPTIONS' ? acceptAll(req, 0) : nth === 1 ? { status: 502 } : { status: 200 }));
  writeFileSync(
    join(dir.dir, 'partner-push.yaml'),
    `kind: subscription
name: partner-push
owner: ops
kinds: [PriceLoadingCompleted]
filters: [{ prefix: { subject: "file-" } }]
delivery:
  mode: push
  url: ${hook.url}
  secretsFromEnv: [FILE_SECRET]
  headersFromEnv: { Authorization: FILE_TOKEN }
`,
  );
  writeFileSync(join(dir.dir, 'drop.yaml'), `kind: subscription\nname: drops\nkinds: [PriceLoadingCompleted]\nfilters: [{ exact: { subject: "drop-me" } }]\ndelivery: { mode: file-drop, sink: { directory: out } }\n`);
  const defs = loadConnectors(dir.dir, { environment: { FILE_SECRET, FILE_TOKEN: `Bearer ${FILE_TOKEN}`, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } });
  const out = new PassThrough();
  out.on('data', (c: Buffer) => logs.push(c.toString('utf8')));
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'debug', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
  gw = createGateway(config, createLogger({ level: 'debug', destination: out }));
  gw.declareSubscriptions(defs.flatMap((d) => (d.kind === 'subscription' ? [d.runtime] : [])));
  url = await listening(gw);
});

afterAll(async () => {
  await gw?.close();
  await Promise.allSettled([hook?.close(), flaky?.close()]);
  dir.remove();
});

describe('subscriptions declared in connector files', () => {
  it('run like stored ones, with secrets from the environment; GET lists them read-only', async () => {
    const ev = structuredPriceEvent({ subject: 'file-1' });
    expect((await post(url, [structuredPriceEvent({ subject: 'other' }), ev, structuredPriceEvent({ subject: 'drop-me' })], 'application/cloudevents-batch+json')).status).toBe(202);
    const [req] = await waitFor('the file subscription delivery', () => (hook.deliveries().length > 0 ? hook.deliveries() : undefined), 5000);
    expect(hook.deliveries()).toHaveLength(1);
    expect(req!.headers['ce-id']).toBe(ev.id);
    expect(req!.headers.authorization).toBe(`Bearer ${FILE_TOKEN}`);
    expect(() => new Webhook(FILE_SECRET).verify(req!.body, req!.headers as Record<string, string>)).not.toThrow();
    await waitFor('the dropped file', () => readdirSync(join(dir.dir, 'out'), { withFileTypes: true }).length === 1, 5000);

    const listed = (await (await fetch(`${url}/subscriptions`)).json()) as { items: { name: string; origin: string; group: string }[] };
    expect(listed.items.find((i) => i.name === 'drops')).toMatchObject({ origin: 'file', group: 'ce-gateway.sub.connectors.drops' });
    const patch = await fetch(`${url}/subscriptions/drops`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"state":"paused"}' });
    expect(patch.status).toBe(409);
    expect((await fetch(`${url}/subscriptions/drops`, { method: 'DELETE' })).status).toBe(409);
  });

  it('a file subscription shadowing a stored one of the same owner and name: the takeover is logged once, and a replay of it is refused (409), not run under the file\'s member', async () => {
    // Stored before the file came (the API refuses a name a file declares): a stored record copied under the file's name.
    const created = await fetch(`${url}/subscriptions?owner=connectors`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'stored-first', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: hook.url } }) });
    expect(created.status, await created.text()).toBe(201);
    const other = new SubscriptionStore(gw.transport, 'ce-gateway.subscriptions', silentLogger());
    await other.start();
    const stored = other.get('ce-gateway.sub.connectors.stored-first')!;
    await other.put({ ...stored, name: 'drops', group: 'ce-gateway.sub.connectors.drops' });
    await other.stop();
    await waitFor('the takeover logged', () => logs.join('').includes('a connector file declares this subscription'), 5000);
    const line = logs.join('').split('\n').filter((l) => l.includes('a connector file declares this subscription'));
    expect(line).toHaveLength(1);
    expect(JSON.parse(line[0]!)).toMatchObject({ level: 40, subscription: 'ce-gateway.sub.connectors.drops', owner: 'connectors', name: 'drops' });
    const replay = await fetch(`${url}/subscriptions/drops/replay?owner=connectors`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"to":"earliest"}' });
    expect(replay.status).toBe(409);
    expect(((await replay.json()) as { detail: string }).detail).toMatch(/declared in a connector file/);
  });
});

describe('unordered push delivery', () => {
  it('retries through the retry topic: a 502 first, delivered on the second attempt', async () => {
    const name = `u-${randomUUID().slice(0, 8)}`;
    const res = await fetch(`${url}/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], ordering: 'none', retry: { maxAttempts: 3, backoff: { initialMs: 100, factor: 1, maxMs: 1000, jitter: 0 } }, delivery: { mode: 'push', url: flaky.url, headers: { 'X-Api-Key': 'api-key-never-logged' } } }),
    });
    expect(res.status).toBe(201);
    const secret = ((await res.json()) as { delivery: { secrets: string[] } }).delivery.secrets[0]!;
    const ev = structuredPriceEvent();
    expect((await post(url, ev)).status).toBe(202);
    await waitFor('the second attempt', () => flaky.deliveries().length === 2, 5000);
    expect(flaky.deliveries().map((r) => r.headers['ce-id'])).toEqual([ev.id, ev.id]);
    // The same webhook-id on every attempt (receivers drop redeliveries by it).
    expect(new Set(flaky.deliveries().map((r) => r.headers['webhook-id'])).size).toBe(1);
    const text = logs.join('');
    for (const s of [secret, secret.slice(6), FILE_SECRET, FILE_SECRET.slice(6), FILE_TOKEN, 'api-key-never-logged']) expect(text).not.toContain(s);
    expect(text).toContain('subscription started on this instance'); // the logs were captured
  });
});

describe('a credential in the webhook URL', () => {
  it('GET shows its query value masked; a PATCH that sends the masked URL back keeps the stored one; deliveries use the real one', async () => {
    const name = `q-${randomUUID().slice(0, 8)}`;
    const code = `c0de-${randomUUID()}`;
    const res = await fetch(`${url}/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, kinds: ['PriceLoadingCompleted'], filters: [{ exact: { subject: name } }], delivery: { mode: 'push', url: `${hook.url}?code=${code}&region=eu` } }),
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { delivery: { url: string } };
    expect(created.delivery.url).toBe(`${hook.url}?code=***&region=eu`);
    const shown = (await (await fetch(`${url}/subscriptions/${name}`)).json()) as { delivery: Record<string, unknown> };
    expect(shown.delivery.url).toBe(`${hook.url}?code=***&region=eu`);
    expect(JSON.stringify(await (await fetch(`${url}/subscriptions`)).json())).not.toContain(code);
    // Nor on the definitions topic: the record (version 2) keeps the URL masked, the real one sealed
    // with the other secrets (break report 2026-12-06: it was there in clear for any topic reader).
    const definitions = async (): Promise<{ v: number; delivery: { url: string } }[]> =>
      (await readTopic(gw.transport, 'ce-gateway.subscriptions')).filter((r) => r.key !== null && new TextDecoder().decode(r.key) === `ce-gateway.sub.anonymous.${name}` && r.value !== null).map((r) => JSON.parse(new TextDecoder().decode(r.value)) as { v: number; delivery: { url: string } });
    const stored = await definitions();
    expect(stored.length).toBeGreaterThan(0);
    for (const d of stored) {
      expect(JSON.stringify(d)).not.toContain(code);
      expect(d).toMatchObject({ v: 2, delivery: { url: `${hook.url}?code=***&region=eu` } });
    }
    // The GET's whole body sent back with a member changed (output-only fields such as
    // delivery.secretCount, generation, group are ignored): the stored URL stays.
    const patched = await fetch(`${url}/subscriptions/${name}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ ...shown, delivery: { ...shown.delivery, contentMode: 'structured' } }) });
    expect(patched.status, await patched.clone().text()).toBe(200);
    const ev = structuredPriceEvent({ subject: name });
    expect((await post(url, ev)).status).toBe(202);
    const [got] = await waitFor('the delivery', () => {
      const d = hook.deliveries().filter((r) => r.path.includes(code));
      return d.length > 0 ? d : undefined;
    }, 5000);
    expect(got!.path).toBe(`/hook?code=${code}&region=eu`);
    expect(String(got!.headers['content-type'])).toContain('application/cloudevents+json'); // the PATCH applied
    // A URL that differs from the masked one is a change: here the credential is dropped on purpose.
    const dropped = await fetch(`${url}/subscriptions/${name}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ delivery: { url: `${hook.url}?region=eu` } }) });
    expect(((await dropped.json()) as { delivery: { url: string } }).delivery.url).toBe(`${hook.url}?region=eu`);
    // Every version of the record hid the credential; the one without any is version 1 again (older gateways read it).
    const versions = await definitions();
    for (const d of versions) expect(JSON.stringify(d)).not.toContain(code);
    expect(versions.at(-1)).toMatchObject({ v: 1, delivery: { url: `${hook.url}?region=eu` } });
    expect(logs.join('')).not.toContain(code);
    expect((await fetch(`${url}/subscriptions/${name}`, { method: 'DELETE' })).status).toBe(204);
  });
});

describe('the secrets key', () => {
  it('configured, else the development key only where nothing leaves the machine, else none', () => {
    expect(secretsKeyDecision('k', 'kafka', '0.0.0.0')).toBe('configured');
    expect(secretsKeyDecision(undefined, 'memory', '0.0.0.0')).toBe('development');
    expect(secretsKeyDecision(undefined, 'kafka', '127.0.0.1')).toBe('development');
    expect(secretsKeyDecision(undefined, 'kafka', '::1')).toBe('development');
    expect(secretsKeyDecision(undefined, 'kafka', '0.0.0.0')).toBe('absent');
    expect(secretsKeyDecision(undefined, 'kafka', '10.0.0.5')).toBe('absent');
  });

  it('without a key, creating a push subscription is refused with 500 CEG_SECRETS_KEY_MISSING (not retriable: never a 503), nothing stored', async () => {
    const store = new SubscriptionStore(createMemoryTransport(), 'subs', createLogger({ level: 'silent' }));
    await store.start();
    const service = new SubscriptionService({ store, box: undefined, catalog: loadCatalog(), transport: createMemoryTransport(), checkTarget: () => Promise.resolve() });
    const err = await caughtAsync(service.create({ name: 'n1', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: hook.url } }));
    expect(err.code).toBe('CEG_SECRETS_KEY_MISSING');
    expect(toProblem(err).status).toBe(500);
    expect(store.all().size).toBe(0);
    await store.stop();
  });
});
