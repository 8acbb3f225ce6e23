/**
 * Defect E7: one partner could hold every HTTP connection with SSE streams and long-polls (the
 * other partners' `POST /events` and `GET /healthz` got no answer). Each caller now has a cap of
 * concurrent pulls ({@link PullSlots}, `PULL_MAX_CONCURRENT_PER_PARTNER`): one more is a 429
 * problem with `Retry-After`, other partners are not affected, and a slot comes back when its
 * stream or long-poll ends for any reason (client gone, answered, subscription deleted).
 * On a real gateway (in-memory transport, partners file) with the cap set to 3 through the environment; on the router alone
 * with the cap set to 2; the slot counter on its own; the setting's validation.
 */
import { EventEmitter } from 'node:events';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pullRouter } from '../../src/http/api/subscriptions/pull-routes.js';
import type { PullApi } from '../../src/http/api/subscriptions/pull-routes.js';
import { DEFAULT_PULL_SLOTS, PullSlots } from '../../src/http/api/subscriptions/pull-slots.js';
import { problemHandler } from '../../src/http/api/errors.js';
import { Access, attachAccess } from '../../src/http/auth/index.js';
import type { Partner } from '../../src/http/auth/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { sha256 } from '../helpers/partners.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { STRUCTURED } from './helpers.js';

const PROBLEM = /^application\/problem\+json/;

/** An open SSE stream: its answer (headers read, body not) and the way to close it from the client. */
interface Open {
  readonly res: Response;
  close(): void;
}

async function openStream(url: string, key?: string): Promise<Open> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) }, signal: ac.signal });
  return { res, close: () => ac.abort() };
}

/** Expects the over-the-cap answer and returns its problem. */
async function expectOverCap(res: Response, max: number): Promise<Record<string, unknown>> {
  // The status first: an accepted stream's body never ends.
  expect(res.status).toBe(429);
  const text = await res.text();
  expect(res.headers.get('content-type')).toMatch(PROBLEM);
  expect(res.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  const p = JSON.parse(text) as Record<string, unknown>;
  expect(p).toMatchObject({ status: 429, code: 'CEG_RATE_LIMITED', retriable: true, limit: 'concurrentPulls', max });
  expect(p.detail).toMatch(new RegExp(`\\b${max}\\b.*PULL_MAX_CONCURRENT_PER_PARTNER`));
  return p;
}

describe('a partner\'s concurrent pulls on a gateway with partners (PULL_MAX_CONCURRENT_PER_PARTNER=3)', () => {
  const CAP = 3;
  const keys = { acme: randomUUID(), beta: randomUUID() };
  const dir = mkdtempSync(join(tmpdir(), 'ceg-pull-cap-'));
  const open: Open[] = [];
  let gw: TestGateway;

  beforeAll(async () => {
    const file = join(dir, 'partners.yaml');
    writeFileSync(
      file,
      `partners:
  - id: acme
    keys: [{ sha256: ${sha256(keys.acme)} }]
    subscribe: [PriceLoadingCompleted]
  - id: beta
    keys: [{ sha256: ${sha256(keys.beta)} }]
    sources: ["urn:partner:beta"]
    publish: [PriceLoadingCompleted]
    subscribe: [PriceLoadingCompleted]
`,
    );
    gw = await startGateway({ stack: false, env: { PARTNERS_FILE: file, SUBSCRIPTION_SECRETS_KEY: randomBytes(32).toString('base64'), PULL_MAX_CONCURRENT_PER_PARTNER: String(CAP) } });
    await gw.gateway.subscriptionsLoaded();
  });
  afterAll(async () => {
    for (const s of open) s.close();
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = (method: string, path: string, key: string, body?: unknown, type = 'application/json'): Promise<Response> =>
    fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': type }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const create = async (key: string, name: string): Promise<void> => {
    const r = await call('POST', '/subscriptions', key, { name, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
    expect(r.status, await r.text()).toBe(201);
  };
  const stream = async (key: string, name: string): Promise<Open> => {
    const s = await openStream(`${gw.url}/subscriptions/${name}/stream?heartbeat=60`, key);
    if (s.res.status === 200) open.push(s);
    return s;
  };

  it('refuses the stream and the long-poll past the cap with 429, serves another partner, and gives a slot back when a stream ends', async () => {
    await create(keys.acme, 'pl');
    await create(keys.acme, 'gone');
    await create(keys.beta, 'bl');

    // The cap's worth of streams: one of them on a subscription deleted below.
    const mine: Open[] = [];
    for (let i = 0; i < CAP; i++) {
      const s = await stream(keys.acme, i === 0 ? 'gone' : 'pl');
      expect(s.res.status, `stream ${i}`).toBe(200);
      expect(s.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      mine.push(s);
    }

    // One more of either kind is refused, before the subscription is even looked at.
    await expectOverCap((await stream(keys.acme, 'pl')).res, CAP);
    await expectOverCap(await call('GET', '/subscriptions/pl/events?wait=5', keys.acme), CAP);
    await expectOverCap(await call('GET', '/subscriptions/no-such/events', keys.acme), CAP);

    // Everything else still works: acme's other routes, beta's stream and events, the liveness probe.
    expect((await call('GET', '/subscriptions/pl', keys.acme)).status).toBe(200);
    const theirs = await stream(keys.beta, 'bl');
    expect(theirs.res.status).toBe(200);
    const ev = await call('POST', '/events', keys.beta, structuredPriceEvent({ source: 'urn:partner:beta' }), STRUCTURED);
    expect(ev.status, await ev.text()).toBe(202);
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);

    // The client closes one stream: its slot comes back (once the server has seen the close).
    mine[1]!.close();
    const again = await vi.waitFor(async () => {
      const s = await stream(keys.acme, 'pl');
      expect(s.res.status).toBe(200);
      return s;
    }, { timeout: 10_000, interval: 50 });
    mine[1] = again;
    await expectOverCap((await stream(keys.acme, 'pl')).res, CAP);

    // The server ends a stream (its subscription deleted: `event: error`, 404): that slot comes back too.
    expect((await call('DELETE', '/subscriptions/gone', keys.acme)).status).toBe(204);
    const ended = await mine[0]!.res.text();
    expect(ended).toMatch(/event: error/);
    const afterDelete = await vi.waitFor(async () => {
      const r = await call('GET', '/subscriptions/pl/events?wait=0', keys.acme);
      expect(r.status, await r.text()).toBe(200);
      return r;
    }, { timeout: 10_000, interval: 50 });
    expect(afterDelete.status).toBe(200);
  });

  it('counts the console\'s live tail in the same cap: a tail takes a slot, one over the cap is 429 naming the setting, and closing it gives the slot back', async () => {
    // acme holds CAP - 1 streams from the test above (one ended with its subscription). Wait until
    // the server has let go of every other slot: a long-poll's answer may close after the client read it.
    const tail = (): Promise<Open> => openStream(`${gw.url}/console/api/tail/pl`, keys.acme);
    const first = await vi.waitFor(async () => {
      const t = await tail();
      expect(t.res.status).toBe(200);
      return t;
    }, { timeout: 10_000, interval: 50 });
    open.push(first);
    expect(first.res.headers.get('content-type')).toMatch(/^text\/event-stream/);

    // The tail holds the last slot: a stream and a second tail are both refused.
    await expectOverCap((await stream(keys.acme, 'pl')).res, CAP);
    const p = await expectOverCap((await tail()).res, CAP);
    expect(p.setting).toBe('PULL_MAX_CONCURRENT_PER_PARTNER');
    // Another partner's tail is not counted against acme.
    const theirs = await openStream(`${gw.url}/console/api/tail/bl`, keys.beta);
    expect(theirs.res.status).toBe(200);
    open.push(theirs);

    first.close();
    const back = await vi.waitFor(async () => {
      const s = await stream(keys.acme, 'pl');
      expect(s.res.status).toBe(200);
      return s;
    }, { timeout: 10_000, interval: 50 });
    expect(back.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  });
});

describe('pullRouter with maxConcurrentPerPartner: 2', () => {
  let server: Server;
  let base: string;
  const partner = (id: string): Partner => ({ id, keyHashes: [], sources: [], publish: { all: true, eventIds: new Set() }, subscribe: { all: true, eventIds: new Set() }, permissions: new Set(), roles: new Set(), limits: {} });
  /** Pulls that wait until the client goes away, and long-polls answered at once when `?max=1`. */
  const api: PullApi = {
    open: () =>
      Promise.resolve({
        next: (o: { readonly max: number; readonly signal?: AbortSignal }) =>
          o.max === 1
            ? Promise.resolve({ events: [], cursor: 'c1.x.y' })
            : new Promise((ok) => {
                o.signal?.addEventListener('abort', () => ok({ events: [], cursor: 'c1.x.y' }));
              }),
      }) as never,
    commit: () => Promise.resolve(),
  };

  beforeAll(async () => {
    const app = express();
    const log = createLogger({ level: 'silent' });
    // As the auth middleware does: the `x-partner` header stands in for an API key here.
    app.use((req, _res, next) => {
      attachAccess(req, new Access(partner(String(req.headers['x-partner'] ?? 'anonymous')), log));
      next();
    });
    app.use(pullRouter(() => api, { maxConcurrentPerPartner: 2 }));
    app.use(problemHandler({ retryAfterS: 99 }));
    server = app.listen(0, '127.0.0.1');
    await new Promise((ok) => server.once('listening', ok));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  });

  const get = (path: string, who: string, signal?: AbortSignal): Promise<Response> => fetch(`${base}${path}`, { headers: { 'x-partner': who }, ...(signal === undefined ? {} : { signal }) });

  it('a third stream or long-poll of one caller is 429, other callers are not counted, a closed stream frees its slot', async () => {
    const a1 = new AbortController();
    const a2 = new AbortController();
    expect((await get('/subscriptions/s/stream', 'acme', a1.signal)).status).toBe(200);
    // A long-poll waiting (its answer comes only when it is aborted): the second slot, once it is in.
    const waiting = get('/subscriptions/s/events?max=5&wait=30', 'acme', a2.signal).catch(() => undefined);
    const p = await vi.waitFor(async () => {
      const extra = new AbortController();
      const r = await get('/subscriptions/s/stream', 'acme', extra.signal);
      if (r.status === 200) extra.abort(); // the long-poll was not in yet: this one must not stay
      return await expectOverCap(r, 2);
    }, { timeout: 5_000, interval: 20 });
    expect(p.detail).toMatch(/partner acme/);
    await expectOverCap(await get('/subscriptions/s/events?max=1', 'acme'), 2);

    const b = new AbortController();
    expect((await get('/subscriptions/s/stream', 'beta', b.signal)).status).toBe(200);
    expect((await get('/subscriptions/s/events?max=1', 'beta')).status).toBe(200);

    a1.abort();
    const a3 = new AbortController();
    await vi.waitFor(async () => {
      const r = await get('/subscriptions/s/stream', 'acme', a3.signal);
      expect(r.status).toBe(200);
    }, { timeout: 5_000, interval: 20 });
    a2.abort();
    await waiting;
    a3.abort();
    b.abort();
  });

  it('answers with no slot taken by a refused or finished long-poll', async () => {
    // Many one-at-a-time long-polls that answer: none of them keeps a slot.
    for (let i = 0; i < 5; i++) expect((await get('/subscriptions/s/events?max=1', 'gamma')).status).toBe(200);
    // A bad parameter is still a 400, and takes no slot either.
    for (let i = 0; i < 3; i++) expect((await get('/subscriptions/s/events?max=0', 'gamma')).status).toBe(400);
    const a = new AbortController();
    const b = new AbortController();
    expect((await get('/subscriptions/s/stream', 'gamma', a.signal)).status).toBe(200);
    expect((await get('/subscriptions/s/stream', 'gamma', b.signal)).status).toBe(200);
    a.abort();
    b.abort();
  });
});

describe('PullSlots', () => {
  const response = (): ServerResponse & { closed: boolean } => Object.assign(new EventEmitter(), { closed: false }) as unknown as ServerResponse & { closed: boolean };
  const close = (r: ServerResponse & { closed: boolean }): void => {
    r.closed = true;
    r.emit('close');
  };

  it('counts per caller, refuses past the cap, gives back once per response, never below zero', () => {
    const slots = new PullSlots(2);
    const [r1, r2, r3] = [response(), response(), response()];
    slots.take('acme', r1);
    slots.take('acme', r2);
    expect(() => slots.take('acme', r3)).toThrow(/PULL_MAX_CONCURRENT_PER_PARTNER/);
    slots.take('beta', r3);
    expect([slots.held('acme'), slots.held('beta')]).toEqual([2, 1]);
    close(r1);
    close(r1); // a second 'close' (it cannot happen on a real response) gives nothing back twice
    expect(slots.held('acme')).toBe(1);
    close(r2);
    close(r3);
    expect([slots.held('acme'), slots.held('beta')]).toEqual([0, 0]);
    // A response closed before the take (the client left while the request was read) holds nothing.
    const gone = response();
    gone.closed = true;
    slots.take('acme', gone);
    expect(slots.held('acme')).toBe(0);
  });

  it('refuses a cap that is not a whole number ≥ 1', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new PullSlots(bad)).toThrow(RangeError);
    expect(new PullSlots().max).toBe(DEFAULT_PULL_SLOTS);
  });
});

describe('PULL_MAX_CONCURRENT_PER_PARTNER', () => {
  it('defaults to 32, takes a whole number ≥ 1, refuses anything else naming the variable', () => {
    expect(loadConfig({}).subscriptions.pullMaxConcurrentPerPartner).toBe(DEFAULT_PULL_SLOTS);
    expect(loadConfig({ PULL_MAX_CONCURRENT_PER_PARTNER: '2' }).subscriptions.pullMaxConcurrentPerPartner).toBe(2);
    for (const bad of ['0', '-1', '1.5', 'many']) expect(() => loadConfig({ PULL_MAX_CONCURRENT_PER_PARTNER: bad })).toThrow(/PULL_MAX_CONCURRENT_PER_PARTNER/);
  });
});
