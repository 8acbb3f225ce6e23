/**
 * Issue 11's "done when" as one suite, run on the in-memory adapters (test/http/auth.test.ts) and
 * on the real stack (test/integration/auth.kafka.test.ts): two partners with different permissions
 * and an admin; 401 / 403 / 404 / 429 answers; nothing written when refused (end offsets); secrets
 * never in the logs, problem answers or GET responses.
 */
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { INTERNAL_KIND, partnersSetup, sha256 } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';
import { BATCH, STRUCTURED } from './helpers.js';
import { listening } from '../helpers/gateway.js';

const SIGNAL = 'b785f117-3e61-4864-89c3-4accf13140c2';

export interface AuthTarget {
  /** Extra variables (the stack's Kafka and registry, or none for the in-memory adapters). */
  readonly env: Record<string, string>;
  /** Prefix of this run's topics and subscription names. */
  readonly prefix: string;
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly body: Record<string, unknown>;
}

export function authScenarios(name: string, target: () => AuthTarget): void {
  describe(`partners, permissions and limits (${name})`, () => {
    let setup: PartnersSetup;
    let gw: Gateway;
    let url: string;
    let prefix: string;
    const logs: string[] = [];
    const answers: string[] = [];

    async function call(method: string, path: string, key: string | undefined, body?: unknown, contentType = 'application/json'): Promise<Answer> {
      const headers: Record<string, string> = {};
      if (key !== undefined) headers.authorization = `Bearer ${key}`;
      if (body !== undefined) headers['content-type'] = contentType;
      const res = await fetch(`${url}${path}`, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) });
      const text = await res.text();
      answers.push(text);
      let parsed: Record<string, unknown> = {};
      try {
        parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
      } catch {
        parsed = {};
      }
      return { status: res.status, headers: res.headers, text, body: parsed };
    }
    const publish = (key: string | undefined, event: unknown, contentType = STRUCTURED): Promise<Answer> => call('POST', '/events', key, event, contentType);
    const ends = async (topic: string): Promise<bigint> => (await gw.transport.endOffsets(topic)).reduce((a, p) => a + p.offset, 0n);
    const topicOf = (eventId: string): string => gw.catalog.byEventId(eventId)!.topic.name;
    const hook = { mode: 'push', url: 'http://127.0.0.1:9/hook' };

    beforeAll(async () => {
      const t = target();
      prefix = t.prefix;
      setup = partnersSetup(prefix, { requestsPerSecond: 1000, eventsPerSecond: 5 });
      process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
      const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'trace', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTIONS_TOPIC: `${prefix}.subscriptions`, ...setup.env, ...t.env });
      const out = new PassThrough();
      out.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
      gw = createGateway(config, createLogger({ level: 'trace', destination: out }));
      url = await listening(gw);
    });
    afterAll(async () => {
      await gw?.close();
      setup?.cleanup();
    });

    it('an unknown key, a missing one or a malformed header → 401 with WWW-Authenticate, whichever route', async () => {
      for (const [path, key] of [['/subscriptions', 'not-a-key'], ['/subscriptions', undefined], ['/no-such-route', undefined], ['/events', 'x'.repeat(40)]] as const) {
        const r = await call(path === '/events' ? 'POST' : 'GET', path, key);
        expect(r.status, `${path} ${String(key)}`).toBe(401);
        expect(r.headers.get('content-type')).toContain('application/problem+json');
        expect(r.body.code).toBe('CEG_UNAUTHENTICATED');
        expect(r.headers.get('www-authenticate')).toBe(key === undefined ? 'Bearer realm="ce-gateway"' : 'Bearer realm="ce-gateway", error="invalid_token"');
      }
      const basic = await fetch(`${url}/subscriptions`, { headers: { authorization: `Basic ${Buffer.from(`acme:${setup.keys.acme}`).toString('base64')}` } });
      expect(basic.status).toBe(401);
    });

    it('public paths answer without a key; /metrics needs an admin', async () => {
      for (const path of ['/healthz', '/readyz', '/catalog', '/asyncapi.json', `/schemas/json/PriceLoadingCompleted.json`]) {
        expect((await call('GET', path, undefined)).status, path).toBe(200);
      }
      expect((await call('GET', '/metrics', undefined)).status).toBe(401);
      const m = await call('GET', '/metrics', setup.keys.acme);
      expect(m.status).toBe(403);
      expect(m.body.permission).toBe('admin');
      expect((await call('GET', '/metrics', setup.keys.ops)).status).toBe(200);
    });

    it('internal kinds are left out of the public documents', async () => {
      const c = await call('GET', '/catalog', undefined);
      const ids = (c.body.kinds as { eventId: string }[]).map((k) => k.eventId);
      expect(ids).toContain(SIGNAL);
      expect(ids).not.toContain(INTERNAL_KIND);
      expect((await call('GET', '/schemas/json/SeriesUpdateCompleted.json', undefined)).status).toBe(404);
      expect((await call('GET', '/asyncapi.json', undefined)).text).not.toContain(INTERNAL_KIND);
    });

    it('a permitted publish → 202, with either of the partner\'s keys (rotation) and the RateLimit headers', async () => {
      for (const key of [setup.keys.acme, setup.keys.acmeNext]) {
        const r = await publish(key, structuredPriceEvent({ source: 'urn:partner:acme:eu' }));
        expect(r.status, r.text).toBe(202);
        expect(r.headers.get('ratelimit-policy')).toContain('"requests";q=1000;w=1');
        expect(r.headers.get('ratelimit-policy')).toContain('"events";q=5;w=1');
        expect(r.headers.get('ratelimit')).toMatch(/"events";r=\d+;t=\d+/);
      }
    });

    it('an unpermitted kind → 403 naming publish, decided before the data (invalid data still 403), nothing written', async () => {
      const topic = topicOf(SIGNAL);
      const before = await ends(topic);
      const r = await publish(setup.keys.acme, { ...structuredPriceEvent({ source: 'urn:partner:acme', type: SIGNAL }), data: { not: 'a signal' } });
      expect(r.status, r.text).toBe(403);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.body.code).toBe('CEG_FORBIDDEN');
      expect(r.body.permission).toBe('publish');
      expect((r.body.violations as { attribute: string }[])[0]?.attribute).toBe('type');
      expect(await ends(topic)).toBe(before);
    });

    it('publishing under another partner\'s source → 403 naming source, nothing written; a batch is refused whole', async () => {
      const topic = topicOf(structuredPriceEvent().type as string);
      const before = await ends(topic);
      const r = await publish(setup.keys.acme, structuredPriceEvent({ source: 'urn:partner:globex' }));
      expect(r.status).toBe(403);
      expect(r.body.permission).toBe('source');
      const b = await publish(setup.keys.acme, [structuredPriceEvent({ source: 'urn:partner:acme' }), structuredPriceEvent({ source: 'urn:partner:acmex' })], BATCH);
      expect(b.status).toBe(403);
      expect((b.body.violations as { index: number; attribute: string }[]).map((v) => [v.index, v.attribute])).toEqual([[1, 'source']]);
      expect(await ends(topic)).toBe(before);
    });

    it('an internal kind over HTTP → 403 even for a partner that names it in publish, nothing written', async () => {
      const topic = topicOf(INTERNAL_KIND);
      const before = await ends(topic);
      const r = await publish(setup.keys.globex, structuredPriceEvent({ source: 'urn:partner:globex', type: INTERNAL_KIND }, { instrument: 'EUR/USD' }));
      expect(r.status).toBe(403);
      expect(r.body.permission).toBe('internal');
      expect(await ends(topic)).toBe(before);
    });

    it('subscriptions belong to their creator: others get 404 (BOLA); an admin reaches them with ?owner= and is audited', async () => {
      const sub = `${prefix}-a-${randomUUID().slice(0, 6)}`.replace(/\./g, '-');
      const created = await call('POST', '/subscriptions', setup.keys.acme, { name: sub, kinds: ['PriceLoadingCompleted'], delivery: hook, state: 'paused' });
      expect(created.status, created.text).toBe(201);
      expect(created.body.owner).toBe('acme');
      expect(created.body.group).toBe(`ce-gateway.sub.acme.${sub}`);
      // globex: not its own → 404 for GET, PATCH, DELETE, and ?owner= does not help
      for (const [m, path, body] of [['GET', `/subscriptions/${sub}`], ['PATCH', `/subscriptions/${sub}`, { state: 'active' }], ['DELETE', `/subscriptions/${sub}`], ['GET', `/subscriptions/${sub}?owner=acme`], ['GET', '/subscriptions?owner=acme']] as const) {
        const r = await call(m, path, setup.keys.globex, body);
        expect(r.status, `${m} ${path}`).toBe(404);
        expect(r.body.code).toBe('CEG_NOT_FOUND');
        expect((r.body.violations as { field?: string }[] | undefined)?.[0]?.field, `${m} ${path}`).toBe(path.includes('owner=') ? 'owner' : 'name');
      }
      expect(((await call('GET', '/subscriptions', setup.keys.globex)).body.items as unknown[]).length).toBe(0);
      // globex may create one of the same name: its own group
      const g = await call('POST', '/subscriptions', setup.keys.globex, { name: sub, kinds: ['PriceLoadingCompleted'], delivery: hook, state: 'paused' });
      expect(g.status, g.text).toBe(201);
      expect(g.body.group).toBe(`ce-gateway.sub.globex.${sub}`);
      // acme sees only its own
      const mine = (await call('GET', '/subscriptions', setup.keys.acme)).body.items as { owner: string }[];
      expect(mine.every((v) => v.owner === 'acme')).toBe(true);
      // the admin sees both and changes acme's, audited
      const all = (await call('GET', '/subscriptions', setup.keys.ops)).body.items as { name: string; owner: string }[];
      expect(all.filter((v) => v.name === sub).map((v) => v.owner).sort()).toEqual(['acme', 'globex']);
      const p = await call('PATCH', `/subscriptions/${sub}?owner=acme`, setup.keys.ops, { rateLimit: 5 }, 'application/merge-patch+json');
      expect(p.status, p.text).toBe(200);
      expect(logs.join('')).toMatch(new RegExp(`"audit":true,"partner":"ops".*"action":"update-subscription".*"owner":"acme"`));
      // a replay is audited after it ran, with its outcome: here no such subscription
      const noSub = `${sub}-none`;
      const replayed = await call('POST', `/subscriptions/${noSub}/replay?owner=acme`, setup.keys.ops, { to: 'earliest' });
      expect(replayed.status, replayed.text).toBe(404);
      const replayLines = logs.join('').split('\n').filter((l) => l.includes('"audit":true') && l.includes(noSub));
      expect(replayLines).toHaveLength(1);
      expect(JSON.parse(replayLines[0]!)).toMatchObject({ partner: 'ops', action: 'replay', target: { owner: 'acme', subscription: noSub }, outcome: 'failed', error: 'CEG_NOT_FOUND' });
      // the console's tail follows the same rule; its trace is for admins only
      expect((await call('GET', `/console/api/tail/${sub}?owner=acme`, setup.keys.globex)).status).toBe(404);
      const trace = await call('GET', '/console/api/trace/some-id', setup.keys.globex);
      expect(trace.status).toBe(403);
      expect(trace.body.permission).toBe('admin');
      expect((await call('GET', '/console', undefined)).status).toBe(200);
      expect((await call('DELETE', `/subscriptions/${sub}`, setup.keys.globex)).status).toBe(204);
      expect((await call('GET', `/subscriptions/${sub}`, setup.keys.acme)).status).toBe(200);
      expect((await call('DELETE', `/subscriptions/${sub}?owner=acme`, setup.keys.ops)).status).toBe(204);
    });

    it('subscribe permissions: a kind outside the partner\'s subscribe → 403; internal kinds only when named', async () => {
      const n = `${prefix}-s-${randomUUID().slice(0, 6)}`.replace(/\./g, '-');
      const g = await call('POST', '/subscriptions', setup.keys.globex, { name: n, kinds: ['StrategySignal'], delivery: hook });
      expect(g.status).toBe(403);
      expect(g.body.permission).toBe('subscribe');
      expect((g.body.violations as { field: string }[])[0]?.field).toBe('kinds[0]');
      // An internal kind the partner may not read is answered as an unknown one (never confirmed by name).
      const a = await call('POST', '/subscriptions', setup.keys.acme, { name: n, kinds: ['SeriesUpdateCompleted'], delivery: hook });
      expect(a.status).toBe(400);
      expect(a.text).toContain('unknown event kind');
      const o = await call('POST', '/subscriptions', setup.keys.ops, { name: n, kinds: ['SeriesUpdateCompleted'], delivery: hook, state: 'paused' });
      expect(o.status, o.text).toBe(201);
      expect((await call('DELETE', `/subscriptions/${n}`, setup.keys.ops)).status).toBe(204);
    });

    it('maxSubscriptions: past it → 403 CEG_QUOTA_EXCEEDED naming the bound', async () => {
      const names = [0, 1, 2].map((i) => `${prefix}-q${i}-${randomUUID().slice(0, 6)}`.replace(/\./g, '-'));
      const existing = ((await call('GET', '/subscriptions', setup.keys.acme)).body.items as unknown[]).length;
      const statuses: number[] = [];
      for (const n of names) statuses.push((await call('POST', '/subscriptions', setup.keys.acme, { name: n, kinds: ['PriceLoadingCompleted'], delivery: hook, state: 'paused' })).status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(2 - existing);
      const last = await call('POST', '/subscriptions', setup.keys.acme, { name: `${names[0]}x`, kinds: ['PriceLoadingCompleted'], delivery: hook });
      expect(last.status).toBe(403);
      expect(last.body.code).toBe('CEG_QUOTA_EXCEEDED');
      expect(last.body.maxSubscriptions).toBe(2);
      // At the quota, a bad body is still named first (the quota comes after the body's checks)
      const bad = await call('POST', '/subscriptions', setup.keys.acme, { name: 'eu_x.y', kinds: ['PriceLoadingCompleted'], delivery: hook });
      expect(bad.status, bad.text).toBe(400);
      expect((bad.body.violations as { field: string }[]).map((v) => v.field)).toContain('name');
      // An admin creating for acme (?owner=acme) meets acme's quota too
      const forAcme = await call('POST', '/subscriptions?owner=acme', setup.keys.ops, { name: `${names[0]}y`, kinds: ['PriceLoadingCompleted'], delivery: hook, state: 'paused' });
      expect(forAcme.status, forAcme.text).toBe(403);
      expect(forAcme.body.code).toBe('CEG_QUOTA_EXCEEDED');
      for (const n of names) await call('DELETE', `/subscriptions/${n}`, setup.keys.acme);
    });

    it('an admin creating for another partner (?owner=) is held to that partner\'s subscribe grant, not its own', async () => {
      const n = `${prefix}-og-${randomUUID().slice(0, 6)}`.replace(/\./g, '-');
      // globex may subscribe to PriceLoadingCompleted only: StrategySignal for globex is 403, though the admin may read it
      const refused = await call('POST', '/subscriptions?owner=globex', setup.keys.ops, { name: n, kinds: ['StrategySignal'], delivery: hook, state: 'paused' });
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body.permission).toBe('subscribe');
      expect(refused.body.detail).toContain('partner globex may not subscribe to StrategySignal');
      const patched = await call('POST', '/subscriptions?owner=globex', setup.keys.ops, { name: n, kinds: ['PriceLoadingCompleted'], delivery: hook, state: 'paused' });
      expect(patched.status, patched.text).toBe(201);
      const widened = await call('PATCH', `/subscriptions/${n}?owner=globex`, setup.keys.ops, { kinds: ['StrategySignal'] }, 'application/merge-patch+json');
      expect(widened.status, widened.text).toBe(403);
      expect(widened.body.permission).toBe('subscribe');
      expect((await call('DELETE', `/subscriptions/${n}?owner=globex`, setup.keys.ops)).status).toBe(204);
    });

    it('over the events rate → 429 with Retry-After and RateLimit headers, nothing written; another partner is not slowed', async () => {
      const topic = topicOf(structuredPriceEvent().type as string);
      // 5 events/s for acme: a batch of 5 empties the bucket, the next request is refused
      const batch = (n: number): unknown[] => Array.from({ length: n }, (_, i) => structuredPriceEvent({ source: 'urn:partner:acme' }, priceLoaded('EUR/USD', 'H4', `2203151${i}`)));
      let refused: Answer | undefined;
      for (let i = 0; i < 5 && refused === undefined; i++) {
        const r = await publish(setup.keys.acme, batch(5), BATCH);
        if (r.status === 429) refused = r;
        else expect(r.status, r.text).toBe(202);
      }
      expect(refused, 'a 429 within 5 batches of 5 at 5 events/s').toBeDefined();
      const before = await ends(topic);
      const again = await publish(setup.keys.acme, batch(5), BATCH);
      if (again.status === 429) expect(await ends(topic)).toBe(before);
      expect(refused!.body.code).toBe('CEG_RATE_LIMITED');
      expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // fewer than the batch's 5 events left (a little may have dripped back in since the last batch)
      expect(Number(/"events";r=(\d+);t=[1-9]\d*/.exec(refused!.headers.get('ratelimit') ?? '')?.[1])).toBeLessThan(5);
      // globex publishes at once, unaffected by acme's bucket
      const signal = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__22031512', strategy: 's1', signalId: randomUUID(), side: 'BUY', price: '1.23450', generatedAt: '2022-03-15T12:00:05.000Z' };
      const g = await publish(setup.keys.globex, structuredPriceEvent({ source: 'urn:partner:globex', type: SIGNAL }, signal));
      expect(g.status, g.text).toBe(202);
      // counted: 429s by policy, 401s (the first tests sent several)
      const m = await call('GET', '/metrics', setup.keys.ops);
      expect(Number(/ce_gateway_rate_limited_total\{policy="events"\} (\d+)/.exec(m.text)?.[1])).toBeGreaterThanOrEqual(1);
      expect(Number(/ce_gateway_auth_failures_total (\d+)/.exec(m.text)?.[1])).toBeGreaterThanOrEqual(4);
    });

    it('failed attempts from one address are limited: past the allowance → 429 even with a valid key', async () => {
      // AUTH_FAILURES_PER_MINUTE defaults to 10; earlier tests spent some already.
      let limited: Answer | undefined;
      for (let i = 0; i < 12 && limited === undefined; i++) {
        const r = await call('GET', '/subscriptions', `wrong-${i}`);
        if (r.status === 429) limited = r;
      }
      expect(limited?.body.code).toBe('CEG_RATE_LIMITED');
      expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await call('GET', '/subscriptions', setup.keys.ops)).status).toBe(429);
    });

    it('no key, hash or Authorization value in the logs or in any answer', async () => {
      const text = logs.join('');
      expect(text.length).toBeGreaterThan(0);
      for (const key of Object.values(setup.keys)) {
        expect(text).not.toContain(key);
        expect(text).not.toContain(sha256(key));
        for (const a of answers) {
          expect(a).not.toContain(key);
          expect(a).not.toContain(sha256(key));
        }
      }
    });
  });
}
