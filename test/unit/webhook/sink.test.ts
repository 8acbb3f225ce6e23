/**
 * The push sink (`createWebhookSink` in src/connectors/sinks/webhook/sink.ts, and the sinks
 * `runtimeSinkFactory` builds) against a real HTTP server on 127.0.0.1:
 * - the validation handshake answered 429/503 with `Retry-After` waits that long, capped by the
 *   policy (issue 8: "429 and 503 with Retry-After are honoured (capped by the policy)");
 * - an accepted handshake is kept for the process: a sink built again for the same subscription
 *   (a member started after an idle stop) does not ask again; another subscription, another
 *   incarnation, another requested rate, a URL changed and changed back, and a 410 do;
 * - the rate limit's token bucket starts full: the first second's worth of events goes at once,
 *   the rest at the rate, and a rate change grants no second burst.
 * Spec: CloudEvents Web Hooks 1.0.2 §4 (validation handshake); RFC 9110 §10.2.3 (Retry-After).
 */
import { getEventListeners, setMaxListeners } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DeliveryContext, Outcome } from '../../../src/bus/subscriber/index.js';
import type { SinkContext } from '../../../src/bus/subscriptions/index.js';
import { runtimeSinkFactory } from '../../../src/connectors/subscriptions/runtime.js';
import type { RuntimeSubscription } from '../../../src/connectors/subscriptions/runtime.js';
import { HandshakeCache, createWebhookSink, parseAllowList } from '../../../src/connectors/sinks/webhook/index.js';
import type { PushSettings, WebhookSink } from '../../../src/connectors/sinks/webhook/index.js';
import type { Envelope } from '../../../src/envelope/index.js';
import { silentLogger } from '../../../src/observability/index.js';

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly atMs: number;
  readonly requestRate: string | undefined;
  /** The `x-token` request header: which settings' headers a request went with. */
  readonly token: string | undefined;
}
type Answer = { readonly status: number; readonly headers?: Record<string, string>; readonly delayMs?: number; /** Answered only once this settles. */ readonly held?: Promise<void> };

let server: Server;
let base = '';
const seen: Seen[] = [];
/** Per path: how to answer OPTIONS and POST (default: accept the handshake, 200). */
const answers = new Map<string, (method: string) => Answer>();
const ORIGIN = 'gateway.test';
const accept = (method: string): Answer => (method === 'OPTIONS' ? { status: 200, headers: { 'webhook-allowed-origin': ORIGIN } } : { status: 200 });

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      seen.push({ method: req.method ?? '', path, atMs: performance.now(), requestRate: req.headers['webhook-request-rate'] as string | undefined, token: req.headers['x-token'] as string | undefined });
      const a = (answers.get(path) ?? accept)(req.method ?? '');
      const answer = (): void => void res.writeHead(a.status, a.headers ?? {}).end();
      if (a.held !== undefined) void a.held.then(answer);
      else if (a.delayMs === undefined) answer();
      else setTimeout(answer, a.delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const allow = parseAllowList('127.0.0.1');
const at = (path: string, method: string): Seen[] => seen.filter((r) => r.path === path && r.method === method);
let nextId = 0;
const event = (): Envelope => ({ attributes: { specversion: '1.0', id: `e-${++nextId}`, source: '/test', type: 'test.happened' }, data: { kind: 'json', value: { n: nextId } } });
const delivery = (): DeliveryContext => ({ subscription: 'test', topic: 't', partition: 0, offset: BigInt(nextId), attempt: 1 });
const settings = (path: string, over: Partial<PushSettings> = {}): PushSettings => ({
  url: `${base}${path}`,
  contentMode: 'binary',
  data: 'json',
  handshake: true,
  secrets: [],
  headers: {},
  timeoutMs: 2000,
  retryAfterCapMs: 60_000,
  rateLimit: null,
  concurrency: 16,
  ...over,
});
const sinkCtx = (share = (): number => 1): SinkContext & { gone: string[] } => {
  const gone: string[] = [];
  return { gone, markGone: (reason) => void gone.push(reason), share };
};
const deliver = async (sink: Pick<WebhookSink, 'handler'>): Promise<Outcome | void> => sink.handler(event(), delivery());
/** A promise the test settles (`open`): an answer held until then. */
function gate(): { readonly held: Promise<void>; open(): void } {
  let open = (): void => undefined;
  const held = new Promise<void>((r) => (open = r));
  return { held, open: () => open() };
}
/**
 * performance.now() — the clock of the rate limiter's token bucket (the `limiter` package) — held
 * at a value the test moves (`advance`, ms): what the bucket grants then depends on that value
 * alone, not on how fast a loaded machine runs the test. Timers stay real.
 */
function heldClock(): { advance(ms: number): void; restore(): void } {
  let now = performance.now();
  const spy = vi.spyOn(performance, 'now').mockImplementation(() => now);
  return {
    advance: (ms) => void (now += ms),
    restore: () => spy.mockRestore(),
  };
}
/**
 * Date.now() — the clock of a refused handshake's window (sink.ts `refusals`) — held at a value the
 * test moves (`advance`, ms), as {@link heldClock} does for the rate limiter: a window then ends
 * when the test says so, without the test sleeping through it. Timers stay real.
 */
function heldDate(): { advance(ms: number): void; restore(): void } {
  let now = Date.now();
  const spy = vi.spyOn(Date, 'now').mockImplementation(() => now);
  return {
    advance: (ms) => void (now += ms),
    restore: () => spy.mockRestore(),
  };
}
/**
 * Attempts asleep until their next token: each listens on its own `revoked` signal while it sleeps
 * (sink.ts `sleepUnless`). Counted from a macrotask of its own: at its start no microtask chain is
 * half-run, so a listener added and removed within one (the handshake race on a settled promise)
 * is not counted — only a wait on a timer.
 */
const asleep = (signals: readonly AbortSignal[]): Promise<number> =>
  new Promise((resolve) => setImmediate(() => resolve(signals.filter((x) => getEventListeners(x, 'abort').length > 0).length)));

describe('the validation handshake answered 429 or 503', () => {
  it('waits the Retry-After of a 429 or 503 (capped by the policy) before the next attempt, and sends nothing meanwhile', async () => {
    const cases: [string, Answer, number, number | undefined][] = [
      ['/hs-429', { status: 429, headers: { 'retry-after': '7' } }, 60_000, 7000],
      ['/hs-503-capped', { status: 503, headers: { 'retry-after': '120' } }, 5000, 5000],
      ['/hs-503-date', { status: 503, headers: { 'retry-after': new Date(Date.now() + 30_000).toUTCString() } }, 60_000, 30_000],
      ['/hs-503-none', { status: 503 }, 60_000, undefined],
      ['/hs-403', { status: 403, headers: { 'retry-after': '7' } }, 60_000, undefined],
    ];
    for (const [path, answer, capMs, afterMs] of cases) {
      answers.set(path, (m) => (m === 'OPTIONS' ? answer : { status: 200 }));
      const sink = createWebhookSink(settings(path, { retryAfterCapMs: capMs }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
      const out = await deliver(sink);
      await sink.close();
      expect(out, path).toMatchObject({ kind: 'retry', failure: { status: answer.status } });
      const got = (out as Extract<Outcome, { kind: 'retry' }>).afterMs;
      // Without Retry-After: the first refusal window (1 s), which the attempt waits out (F3).
      if (afterMs === undefined) expect(got, path).toBe(1000);
      else {
        // An HTTP date has a resolution of one second.
        expect(got, path).toBeGreaterThan(afterMs - 2000);
        expect(got, path).toBeLessThanOrEqual(afterMs);
      }
      if (afterMs !== undefined) expect((out as Extract<Outcome, { kind: 'retry' }>).reason, path).toContain('Retry-After');
      expect(at(path, 'OPTIONS'), path).toHaveLength(1);
      expect(at(path, 'POST'), path).toHaveLength(0);
    }
  });
});

describe('accepted handshakes are kept for the process', () => {
  const sub = (path: string, over: Partial<RuntimeSubscription> = {}, push: Partial<PushSettings> = {}): RuntimeSubscription => ({
    group: 'ce-gateway.sub.anonymous.hs',
    name: 'hs',
    owner: 'anonymous',
    kinds: ['K'],
    filters: [],
    ordering: 'key',
    retry: { maxAttempts: 3, backoff: { initialMs: 10, factor: 1, maxMs: 1000, jitter: 0 } },
    startFrom: 'latest',
    state: 'active',
    concurrency: 4,
    origin: 'api',
    incarnation: '2026-01-01T00:00:00.000Z',
    delivery: { mode: 'push', push: settings(path, push) },
    ...over,
  });

  it('a sink built again for the same subscription (a member started after an idle stop) does not ask again; another subscription, incarnation or requested rate does', async () => {
    const factory = runtimeSinkFactory({ log: silentLogger(), allow, origin: ORIGIN });
    const once = async (d: RuntimeSubscription): Promise<void> => {
      const s = factory(d, sinkCtx());
      expect(await deliver(s)).toEqual({ kind: 'ack' });
      await s.close();
    };
    const path = '/kept';
    await once(sub(path));
    await once(sub(path));
    await once(sub(path));
    expect(at(path, 'POST')).toHaveLength(3);
    expect(at(path, 'OPTIONS')).toHaveLength(1);

    await once(sub(path, { group: 'ce-gateway.sub.anonymous.other' }));
    expect(at(path, 'OPTIONS')).toHaveLength(2);
    await once(sub(path, { incarnation: '2026-02-01T00:00:00.000Z' })); // deleted and created again
    expect(at(path, 'OPTIONS')).toHaveLength(3);
    await once(sub(path, {}, { rateLimit: 10 }));
    expect(at(path, 'OPTIONS')).toHaveLength(4);
    expect(at(path, 'OPTIONS')[3]!.requestRate).toBe('600');
    await once(sub(path, {}, { rateLimit: 10 }));
    await once(sub(path));
    expect(at(path, 'OPTIONS')).toHaveLength(4);

    // Another gateway (another factory) asks for itself.
    const other = runtimeSinkFactory({ log: silentLogger(), allow, origin: ORIGIN })(sub(path), sinkCtx());
    await deliver(other);
    await other.close();
    expect(at(path, 'OPTIONS')).toHaveLength(5);
  });

  it('a URL changed and changed back asks again, in place or across a restart; after a 410 the revived subscription asks again', async () => {
    const factory = runtimeSinkFactory({ log: silentLogger(), allow, origin: ORIGIN });
    const [a, b] = ['/url-a', '/url-b'];
    const d = sub(a, { group: 'ce-gateway.sub.anonymous.moves' });
    const s = factory(d, sinkCtx());
    await deliver(s);
    s.update(sub(b, { group: d.group }));
    await deliver(s);
    s.update(sub(a, { group: d.group }));
    await deliver(s);
    await s.close();
    expect([at(a, 'OPTIONS').length, at(b, 'OPTIONS').length]).toEqual([2, 1]);
    // Started again on a: kept. Then on b and on a again (the URL changed while no member ran here): each asks.
    for (const path of [a, b, a]) {
      const r = factory(sub(path, { group: d.group }), sinkCtx());
      await deliver(r);
      await r.close();
    }
    expect([at(a, 'OPTIONS').length, at(b, 'OPTIONS').length]).toEqual([3, 2]);

    const goneAt = '/gone';
    let goneNow = true;
    answers.set(goneAt, (m) => (m === 'OPTIONS' ? accept(m) : { status: goneNow ? 410 : 200 }));
    const g = sub(goneAt, { group: 'ce-gateway.sub.anonymous.gone' });
    const ctx = sinkCtx();
    const first = factory(g, ctx);
    const stop = new AbortController();
    const held = first.handler(event(), { ...delivery(), signal: stop.signal }); // a 410 holds its event until the member stops
    await expect.poll(() => ctx.gone.length).toBe(1);
    stop.abort(new Error('member stopped'));
    await expect(held).rejects.toThrow('member stopped');
    await first.close();
    goneNow = false;
    const revived = factory(g, sinkCtx());
    expect(await deliver(revived)).toEqual({ kind: 'ack' });
    await revived.close();
    expect(at(goneAt, 'OPTIONS')).toHaveLength(2);
  });

  it('a handshake answered after the URL changed is not kept for the old URL: changed back, it asks again', async () => {
    const factory = runtimeSinkFactory({ log: silentLogger(), allow, origin: ORIGIN });
    const [a, b] = ['/late-a', '/late-b'];
    answers.set(a, (m) => (m === 'OPTIONS' ? { ...accept(m), delayMs: 300 } : accept(m)));
    const d = sub(a, { group: 'ce-gateway.sub.anonymous.late' });
    const s = factory(d, sinkCtx());
    const first = deliver(s); // its handshake on a is answered 300 ms later
    await expect.poll(() => at(a, 'OPTIONS').length).toBe(1);
    s.update(sub(b, { group: d.group }));
    await first;
    await deliver(s);
    s.update(sub(a, { group: d.group }));
    await deliver(s);
    await s.close();
    expect([at(a, 'OPTIONS').length, at(b, 'OPTIONS').length]).toEqual([2, 1]);
  });

  it('is bounded: past maxEntries the least recently used entry goes', () => {
    const c = new HandshakeCache(3);
    const key = (n: number) => ({ subscription: `s${n}`, url: `${base}/u${n}`, origin: ORIGIN, requestedRate: null });
    for (let n = 0; n < 3; n++) c.set(key(n), {});
    expect(c.get(key(0))).toEqual({}); // used: now the youngest
    for (let n = 3; n < 1000; n++) c.set(key(n), { allowedPerSecond: n });
    expect(c.size).toBe(3);
    expect(c.get(key(0))).toBeUndefined();
    expect(c.get(key(999))).toEqual({ allowedPerSecond: 999 });
    c.forget('s999');
    expect(c.size).toBe(2);
    c.keepOnly('s998', 'elsewhere');
    expect(c.size).toBe(1);
    expect(() => new HandshakeCache(0)).toThrow(RangeError);
  });
});

describe('settings changed while an attempt waits (break report E1, E2, E6)', () => {
  /** A DNS answer (127.0.0.1) held back until `release`: the window a PATCH can land in. */
  function heldLookup(): { lookup: (host: string) => Promise<{ address: string; family: number }[]>; release: () => void; waiting: () => number } {
    let open = false;
    let waiters: (() => void)[] = [];
    return {
      lookup: async () => {
        if (!open) await new Promise<void>((r) => waiters.push(r));
        return [{ address: '127.0.0.1', family: 4 }];
      },
      release: () => {
        open = true;
        for (const w of waiters) w();
        waiters = [];
      },
      waiting: () => waiters.length,
    };
  }
  const byName = parseAllowList('127.0.0.1,localhost');
  const named = (path: string, over: Partial<PushSettings> = {}): PushSettings => settings(path, { url: `${base.replace('127.0.0.1', 'localhost')}${path}`, ...over });

  it('E1: a URL changed during the target check is not taken as consenting when the old URL accepted the handshake', async () => {
    const [a, b] = ['/e1-accepts', '/e1-refuses'];
    answers.set(b, (m) => (m === 'OPTIONS' ? { status: 403 } : { status: 200 }));
    const dns = heldLookup();
    const sink = createWebhookSink(named(a), { log: silentLogger(), allow: byName, origin: ORIGIN, ctx: sinkCtx(), lookup: dns.lookup });
    const first = deliver(sink);
    await expect.poll(() => dns.waiting()).toBe(1);
    sink.update(named(b)); // the PATCH lands while the first attempt resolves the old URL
    dns.release();
    const outcomes = [await first, await deliver(sink), await deliver(sink)];
    await sink.close();
    // b refused its handshake: nothing is delivered, to b or (after the change) to a.
    expect(outcomes.map((o) => (o as Outcome).kind)).toEqual(['retry', 'retry', 'retry']);
    expect(at(b, 'POST')).toHaveLength(0);
    expect(at(a, 'POST')).toHaveLength(0);
    expect(at(b, 'OPTIONS').length).toBeGreaterThanOrEqual(1);
  });

  it('E2: an attempt prepared before a change of URL and headers goes to the new URL with the new headers, never the old URL with the new headers', async () => {
    const [a, b] = ['/e2-old', '/e2-new'];
    const dns = heldLookup();
    const sink = createWebhookSink(named(a, { handshake: false, headers: { 'x-token': 'old' } }), { log: silentLogger(), allow: byName, origin: ORIGIN, ctx: sinkCtx(), lookup: dns.lookup });
    const inHand = [deliver(sink), deliver(sink), deliver(sink)];
    await expect.poll(() => dns.waiting()).toBe(3);
    sink.update(named(b, { handshake: false, headers: { 'x-token': 'new' } }));
    dns.release();
    expect((await Promise.all(inHand)).map((o) => (o as Outcome).kind)).toEqual(['ack', 'ack', 'ack']);
    await sink.close();
    expect(at(a, 'POST')).toHaveLength(0);
    expect(at(b, 'POST').map((r) => r.token)).toEqual(['new', 'new', 'new']);
  });

  it('E6: a refused handshake stands for a while: events attempted meanwhile get the refusal without another OPTIONS; a URL change asks at once', async () => {
    const [refusing, other] = ['/e6-refuses', '/e6-other'];
    answers.set(refusing, (m) => (m === 'OPTIONS' ? { status: 403 } : { status: 200 }));
    answers.set(other, (m) => (m === 'OPTIONS' ? { status: 403 } : { status: 200 }));
    const sink = createWebhookSink(settings(refusing), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
    const outcomes: (Outcome | void)[] = [];
    for (let i = 0; i < 20; i++) outcomes.push(await deliver(sink));
    expect(outcomes.every((o) => (o as Outcome).kind === 'retry')).toBe(true);
    expect((outcomes[19] as Extract<Outcome, { kind: 'retry' }>).reason).toMatch(/validation handshake/);
    // Within the window an attempt is told to wait until it ends, so its next one asks the sink again.
    const wait = (outcomes[19] as Extract<Outcome, { kind: 'retry' }>).afterMs;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000);
    // One OPTIONS for twenty attempts within the refusal's window (at least 1 s; these took far less, or the count would show it).
    expect(at(refusing, 'OPTIONS').length).toBeLessThanOrEqual(2);
    sink.update(settings(other));
    await deliver(sink);
    await sink.close();
    expect(at(other, 'OPTIONS')).toHaveLength(1);
    expect(at(refusing, 'POST').length + at(other, 'POST').length).toBe(0);
  });
});

describe('a partition revoked while its attempt waits (F1)', () => {
  it('an attempt waiting for a rate token or a handshake is dropped unsent when ctx.revoked aborts; one batch sends only the events still held', async () => {
    // Waits that do not end on their own while the test runs: an OPTIONS answered only when the
    // test opens it, a first token 99 s away (0.01/s, a bucket starting with 0.01). An attempt
    // comes back only because the revoke ended its wait; one that waited on would hang the test
    // (its timeout fails it). No clock is read: a bound of 900 ms after a revoke at 200 ms, with a
    // token due at 1 s, failed on a loaded machine.
    const handshake = gate();
    const slowPath = '/revoke-slow-hs';
    answers.set(slowPath, (method) => (method === 'OPTIONS' ? { status: 200, headers: { 'webhook-allowed-origin': ORIGIN }, held: handshake.held } : { status: 200 }));
    const ratePath = '/revoke-rate';
    for (const [path, over] of [
      [slowPath, {}],
      [ratePath, { handshake: false, rateLimit: 0.01 }],
    ] as const) {
      const sink = createWebhookSink(settings(path, { ...over, timeoutMs: 30_000 }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
      const revoked = new AbortController();
      const pending = Promise.resolve(sink.handler(event(), { ...delivery(), revoked: revoked.signal }));
      // In its wait: the OPTIONS it asked is at the sink, or it sleeps until its token (listening on `revoked`).
      if (path === slowPath) await expect.poll(() => at(path, 'OPTIONS').length).toBe(1);
      else await expect.poll(() => asleep([revoked.signal])).toBe(1);
      revoked.abort(new Error('moved'));
      const out = await pending;
      expect(out, path).toMatchObject({ kind: 'retry', reason: 'partition revoked before the attempt was sent: left to its new owner' });
      if (path === slowPath) {
        // The handshake ends now: the dropped attempt stays unsent; an event still held goes, alone.
        handshake.open();
        expect(await deliver(sink)).toMatchObject({ kind: 'ack' });
        expect(at(path, 'POST')).toHaveLength(1);
      } else expect(at(path, 'POST')).toHaveLength(0);
      await sink.close();
    }
    // A batch of two partitions' events waits for the handshake; one partition is revoked meanwhile:
    // that event is left out of the request.
    const batchHandshake = gate();
    const batchPath = '/revoke-batch';
    answers.set(batchPath, (method) => (method === 'OPTIONS' ? { status: 200, headers: { 'webhook-allowed-origin': ORIGIN }, held: batchHandshake.held } : { status: 200 }));
    const sink = createWebhookSink(settings(batchPath, { batch: { maxEvents: 2, maxBytes: 1_000_000, maxDelayMs: 0 }, timeoutMs: 30_000 }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
    const gone = new AbortController();
    const kept = new AbortController();
    const outs = Promise.all([
      Promise.resolve(sink.handler(event(), { ...delivery(), partition: 1, revoked: gone.signal })),
      Promise.resolve(sink.handler(event(), { ...delivery(), partition: 2, revoked: kept.signal })),
    ]);
    await expect.poll(() => at(batchPath, 'OPTIONS').length).toBe(1);
    gone.abort(new Error('moved'));
    batchHandshake.open();
    const [o1, o2] = await outs;
    await sink.close();
    expect(o1).toMatchObject({ kind: 'retry', reason: 'partition revoked before the attempt was sent: left to its new owner' });
    expect(o2).toMatchObject({ kind: 'ack' });
    const posts = seen.filter((r) => r.path === batchPath && r.method === 'POST');
    expect(posts).toHaveLength(1);
  }, 30_000);
});

describe('batches and the partitions\' revoked signals', () => {
  it('leave no listener behind on a partition\'s revoked signal once their requests are answered (one per event was added and never removed)', async () => {
    const path = '/revoked-listeners';
    const sink = createWebhookSink(settings(path, { handshake: false, batch: { maxEvents: 4, maxBytes: 1_000_000, maxDelayMs: 0 } }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
    // Two partitions held by this member, as a lane hands their events over: 40 events, batches of up to 4 mixing both.
    const p1 = new AbortController();
    const p2 = new AbortController();
    // As a lane's revoked signal (in-flight-window.ts): every event waiting for a slot listens to it.
    setMaxListeners(0, p1.signal, p2.signal);
    try {
      const outs = await Promise.all(
        Array.from({ length: 40 }, (_, i) => Promise.resolve(sink.handler(event(), { ...delivery(), partition: i % 2, revoked: i % 2 === 0 ? p1.signal : p2.signal }))),
      );
      expect(outs.every((o) => o !== undefined && o.kind === 'ack')).toBe(true);
      expect(at(path, 'POST').length).toBeGreaterThanOrEqual(10);
      expect(getEventListeners(p1.signal, 'abort')).toHaveLength(0);
      expect(getEventListeners(p2.signal, 'abort')).toHaveLength(0);
    } finally {
      await sink.close();
    }
  });
});

describe('a refused validation handshake (F3)', () => {
  it('each attempt waits for the refusal window\'s end, even past backoff.maxMs, so each attempt asks once: 4 attempts, 4 OPTIONS, waits 1, 2, 4, 8 s', async () => {
    const path = '/refusing-window';
    answers.set(path, (method) => ({ status: method === 'OPTIONS' ? 500 : 200 }));
    // backoff.maxMs 200 ms: the cap that let 30 attempts pass in 6 s with 5 OPTIONS.
    const sink = createWebhookSink(settings(path, { retryAfterCapMs: 200 }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
    const waits: number[] = [];
    // The windows (1 + 2 + 4 s) pass on a held Date.now(), the clock they are measured on, not in
    // real time: 7 s of sleeping per run before. Each attempt still comes when the subscriber would.
    const clock = heldDate();
    try {
      for (let attempt = 1; attempt <= 4; attempt++) {
        const out = await deliver(sink);
        expect(out).toMatchObject({ kind: 'retry', failure: { status: 500 } });
        const afterMs = (out as { afterMs?: number }).afterMs ?? 0;
        waits.push(afterMs);
        // What the subscriber does: the policy's delay (200 ms) or the outcome's, whichever is longer.
        if (attempt < 4) clock.advance(Math.max(200, afterMs));
      }
    } finally {
      clock.restore();
      await sink.close();
    }
    expect(at(path, 'OPTIONS')).toHaveLength(4);
    expect(at(path, 'POST')).toHaveLength(0);
    waits.forEach((w, i) => expect(w, `attempt ${i + 1}`).toBeGreaterThanOrEqual(900 * 2 ** i));
  });
});

describe('the rate limit', () => {
  it('starts with one second\'s worth: at 8/s the first 8 go at once, the 9th a token later; at 0.5/s the first waits 1 s, not 2 s (empty) nor 0 (full)', async () => {
    // The bucket's clock is held (heldClock): what goes at a given clock value is what the bucket
    // grants, counted; real-time bounds (< 500 ms for the first 8, < 1.9 s for the first at 0.5/s)
    // failed on a loaded machine.
    // Attempts time out 60 s after they start on the held clock (deliver.ts reads performance.now()
    // too): never within the few seconds it is moved here.
    const clock = heldClock();
    try {
      const fast = createWebhookSink(settings('/rate-fast', { handshake: false, rateLimit: 8, concurrency: 16, timeoutMs: 60_000 }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
      const waiting = Array.from({ length: 9 }, () => new AbortController().signal);
      let settled = 0;
      const fastOuts = waiting.map((revoked) => Promise.resolve(fast.handler(event(), { ...delivery(), revoked })).finally(() => settled++));
      // With the clock still: 8 go (a bucket starting empty sends none), the 9th waits for a token.
      await expect.poll(() => settled).toBe(8);
      await expect.poll(() => asleep(waiting)).toBe(1);
      expect(at('/rate-fast', 'POST')).toHaveLength(8);
      // One token's time at 8/s is 125 ms; 1 ms more (here and below): the bucket counts in floating
      // point, and a token due exactly at the held time can come out a hair short (it then waits
      // forever for a clock that does not move — seen once in 8 runs).
      clock.advance(126);
      expect((await Promise.all(fastOuts)).every((o) => o !== undefined && o.kind === 'ack')).toBe(true);
      expect(at('/rate-fast', 'POST')).toHaveLength(9);
      await fast.close();

      // 0.5 events/s: a bucket of 1 that starts with 0.5 tokens. One that started full sent an event
      // at once on every instance starting together (N gateways: N events at once, F4).
      const path = '/rate';
      const sink = createWebhookSink(settings(path, { handshake: false, rateLimit: 0.5, concurrency: 2, timeoutMs: 60_000 }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
      const two = [new AbortController().signal, new AbortController().signal];
      const outs = two.map((revoked) => Promise.resolve(sink.handler(event(), { ...delivery(), revoked })));
      // Both asleep for a token, none sent: the bucket did not start full.
      await expect.poll(() => asleep(two)).toBe(2);
      expect(at(path, 'POST')).toHaveLength(0);
      // 1 s later it holds one token (0.5 + 0.5): one goes, the other sleeps again (an empty start would hold 0.5: none).
      clock.advance(1001);
      await expect.poll(async () => [at(path, 'POST').length, await asleep(two)], { timeout: 10_000 }).toEqual([1, 1]);
      // The next token 2 s after that.
      clock.advance(2001);
      expect((await Promise.all(outs)).every((o) => o !== undefined && o.kind === 'ack')).toBe(true);
      expect(at(path, 'POST')).toHaveLength(2);
      await sink.close();
    } finally {
      clock.restore();
    }
  }, 30_000);

  it('F4: two gateways (half the partitions each) of a sink granting 1/min send nothing at start, not one each at once', async () => {
    const path = '/granted-per-minute';
    answers.set(path, (method) => (method === 'OPTIONS' ? { status: 200, headers: { 'webhook-allowed-origin': ORIGIN, 'webhook-allowed-rate': '1' } } : { status: 200 }));
    const stop = new AbortController();
    const gateways = [0, 1].map(() => createWebhookSink(settings(path, { rateLimit: 10, concurrency: 4 }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx(() => 0.5) }));
    const pending = gateways.map((g) => Promise.resolve(g.handler(event(), { ...delivery(), signal: stop.signal })).catch(() => undefined));
    // Each holds 1/120 events/s: the first token is 2 minutes away. The old bucket started full
    // (and a floor of 0.01/s) and both POSTed within the first second.
    await new Promise((r) => setTimeout(r, 3000));
    expect(at(path, 'OPTIONS')).toHaveLength(2);
    expect(at(path, 'POST')).toHaveLength(0);
    stop.abort(new Error('test over'));
    await Promise.all(pending);
    await Promise.all(gateways.map((g) => g.close()));
  });

  it('a rate so low that the next token is further off than a Node timer holds (rateLimit 1e-9/s: one every 31 years) waits for it, without waking every millisecond', async () => {
    // Below ~4.66e-7/s the wait passes 2^31 − 1 ms: Node ran such a timer after 1 ms with a
    // TimeoutOverflowWarning, so the attempt woke, found no token and slept again, 1,000 times a
    // second, each time a warning line on stderr (17,762 in 9 s seen on a gateway, break report hD).
    const overflows: string[] = [];
    const onWarning = (w: Error): void => void (w.name === 'TimeoutOverflowWarning' && overflows.push(w.message));
    process.on('warning', onWarning);
    try {
      // The three rates wait side by side, each on a sink and path of its own (one after the other
      // they took 3 × 300 ms): one overflowing timer warns, whichever rate it is (Node's warning names the duration).
      const rates = [1e-9, 4e-7, Number.MIN_VALUE];
      const waiting = rates.map((rateLimit, i) => {
        const path = `/rate-tiny-${i}`;
        const sink = createWebhookSink(settings(path, { handshake: false, rateLimit }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx() });
        const stop = new AbortController();
        const attempt = Promise.resolve(sink.handler(event(), { ...delivery(), signal: stop.signal }));
        attempt.catch(() => undefined);
        return { rateLimit, path, sink, stop, attempt };
      });
      // Long enough for hundreds of 1 ms wake-ups (each warns); the count is what is asserted.
      await new Promise((r) => setTimeout(r, 300));
      expect(overflows, `rateLimit ${rates.join(', ')}`).toEqual([]);
      for (const { rateLimit, path, sink, stop, attempt } of waiting) {
        expect(at(path, 'POST'), `rateLimit ${rateLimit}`).toHaveLength(0);
        stop.abort(new Error('test over'));
        await expect(attempt).rejects.toThrow('test over');
        await sink.close();
      }
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('a rate change (the instance\'s share moved) grants no second burst', async () => {
    // The bucket's clock is held (heldClock): a bound on real time (the 4th after the change ≥ 700 ms)
    // failed on a loaded machine — the first 8 took long enough to deliver for the bucket to refill.
    const clock = heldClock();
    try {
      const path = '/rate-share';
      let share = 1;
      const sink = createWebhookSink(settings(path, { handshake: false, rateLimit: 8, concurrency: 8, timeoutMs: 60_000 }), { log: silentLogger(), allow, origin: ORIGIN, ctx: sinkCtx(() => share) });
      await Promise.all(Array.from({ length: 8 }, () => deliver(sink))); // the full bucket, at once
      share = 0.5; // 4/s from now on: the bucket is rebuilt keeping what the old one held (nothing)
      const four = Array.from({ length: 4 }, () => new AbortController().signal);
      const outs = four.map((revoked) => Promise.resolve(sink.handler(event(), { ...delivery(), revoked })));
      // With the clock held all 4 wait for tokens (a rebuilt full bucket sent them at once).
      await expect.poll(() => asleep(four)).toBe(4);
      expect(at(path, 'POST')).toHaveLength(8);
      // 1 s of the new rate later (1 ms more: see the test above) the 4 go.
      clock.advance(1001);
      expect((await Promise.all(outs)).every((o) => o !== undefined && o.kind === 'ack')).toBe(true);
      expect(at(path, 'POST')).toHaveLength(12);
      await sink.close();
    } finally {
      clock.restore();
    }
  });
});

describe('a subscription no longer active on this instance before its member stopped (paused, deleted)', () => {
  it('sends nothing more, also for an attempt already waiting for a rate token; the records wait for the member\'s stop, or go once it is active again', async () => {
    let active = true;
    const ctx: SinkContext = { markGone: () => undefined, share: () => 1, active: () => active };
    const path = '/inactive';
    const sink = createWebhookSink(settings(path, { handshake: false }), { log: silentLogger(), allow, origin: ORIGIN, ctx });
    expect(await deliver(sink)).toMatchObject({ kind: 'ack' });
    expect(at(path, 'POST')).toHaveLength(1);
    active = false;
    const stop = new AbortController();
    const held = Promise.resolve(sink.handler(event(), { ...delivery(), signal: stop.signal }));
    let settled = false;
    held.then(() => (settled = true), () => (settled = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    stop.abort(new Error('member stopping'));
    await expect(held).rejects.toThrow('member stopping');
    await sink.close();

    // Waiting for its rate token (0.5/s: the first token after 1 s) when the pause arrives.
    active = true;
    const ratePath = '/inactive-rate';
    const limited = createWebhookSink(settings(ratePath, { handshake: false, rateLimit: 0.5 }), { log: silentLogger(), allow, origin: ORIGIN, ctx });
    const stop2 = new AbortController();
    const waiting = Promise.resolve(limited.handler(event(), { ...delivery(), signal: stop2.signal }));
    waiting.catch(() => undefined);
    setTimeout(() => (active = false), 200);
    await new Promise((r) => setTimeout(r, 1800));
    expect(at(ratePath, 'POST')).toHaveLength(0);
    stop2.abort(new Error('member stopping'));
    await expect(waiting).rejects.toThrow('member stopping');
    await limited.close();

    // A pause undone before the member stopped: the record waits, then goes, as one attempt.
    active = false;
    const undonePath = '/inactive-undone';
    const resumed = createWebhookSink(settings(undonePath, { handshake: false }), { log: silentLogger(), allow, origin: ORIGIN, ctx });
    const t0 = performance.now();
    const later = Promise.resolve(resumed.handler(event(), { ...delivery(), signal: new AbortController().signal }));
    setTimeout(() => (active = true), 400);
    expect(await later).toMatchObject({ kind: 'ack' });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(390);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(at(undonePath, 'POST')).toHaveLength(1);
    await resumed.close();
  }, 15_000);
});
