/**
 * A pull left something of itself on the long-lived abort signals it listened to, for as long as
 * they lived: on Node 20, `AbortSignal.any([a, b])` adds a WeakRef to the result into a set on each
 * source (nested composites are flattened to their sources) and never takes it out while the source
 * has not aborted. The pull routes combined every request's "client gone" signal with the gateway's
 * `closing` signal (alive for the process's life) that way, and a pull session combined each answer's
 * stop with the caller's signal (for an SSE stream: alive for the stream's life): two WeakRefs and a
 * growing set per long-poll on `closing` (~130 bytes retained per long-poll, measured with heap
 * snapshots: 12,049 WeakRefs after 8,000 `wait=0` polls), and one per answer round on a stream's
 * signal (a stream with `heartbeat=1` is 86,400 per day) — unbounded memory growth for the partner
 * polling in a loop that the default `wait=0` invites. Now both combine signals with listeners they
 * take off again once the request or answer is done (core/abort-fanout `linkedSignal`), so nothing
 * stays on a signal that outlives it.
 *
 * The probe reads Node's own set of dependants of a signal; it is calibrated on this runtime first
 * (an `AbortSignal.any` must show up in it), so the test fails rather than passes if the probe
 * cannot see what it looks for.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED } from '../../../../src/catalog/generated/index.js';
import { DEFAULT_PUSH_RETRY, PullService, cursorSigner } from '../../../../src/bus/subscriptions/index.js';
import type { StoredSubscription } from '../../../../src/bus/subscriptions/index.js';
import { problemHandler } from '../../../../src/http/api/errors.js';
import { pullRouter } from '../../../../src/http/api/subscriptions/pull-routes.js';
import type { PullApi } from '../../../../src/http/api/subscriptions/pull-routes.js';
import { ANONYMOUS, Access, attachAccess } from '../../../../src/http/auth/index.js';
import { silentLogger } from '../../../../src/observability/index.js';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { Transport } from '../../../../src/transport/index.js';
import { codecFixture } from '../helpers.js';

/** How many signals Node keeps as dependants of `signal` (the set behind AbortSignal.any); 0 when it keeps none. */
function dependants(signal: AbortSignal): number {
  const sym = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  if (sym === undefined) return 0;
  return (signal as unknown as Record<symbol, Set<unknown> | undefined>)[sym]?.size ?? 0;
}

describe('the probe', () => {
  it('sees the dependants AbortSignal.any leaves on a source (calibration: the tests below mean something on this runtime)', () => {
    const source = new AbortController();
    const kept: AbortSignal[] = [];
    for (let i = 0; i < 5; i++) kept.push(AbortSignal.any([source.signal, new AbortController().signal]));
    expect(dependants(source.signal)).toBe(5);
    expect(kept).toHaveLength(5);
  });
});

const name = 'retention';
const group = `ce-gateway.sub.anonymous.${name}`;
const now = new Date().toISOString();
const stored: StoredSubscription = {
  v: 1, name, owner: 'anonymous', group, kinds: [PRICE_LOADING_COMPLETED.name], filters: [], start: 'latest', ordering: 'key',
  retry: { maxAttempts: DEFAULT_PUSH_RETRY.maxAttempts, backoff: { initialMs: 1000, factor: 2, maxMs: 60_000, jitter: 0.2 }, maxAgeMs: DEFAULT_PUSH_RETRY.maxAgeMs, timeoutMs: DEFAULT_PUSH_RETRY.timeoutMs },
  concurrency: 1, rateLimit: null, state: 'active', delivery: { mode: 'pull', data: 'json' }, createdAt: now, updatedAt: now, generation: 1,
};

let transport: Transport;
let service: PullService;

beforeAll(async () => {
  const f = await codecFixture();
  transport = createMemoryTransport();
  await transport.ensureTopics([{ name: PRICE_LOADING_COMPLETED.topic, partitions: 3, retentionMs: -1, cleanupPolicy: 'delete' }]);
  service = new PullService({ subscription: (g) => (g === group ? stored : undefined), catalog: f.catalog, codec: () => f.codec, transport, signer: cursorSigner(randomBytes(32)), log: silentLogger() });
});
afterAll(async () => {
  await transport?.close();
});

describe('a pull session', () => {
  it('leaves nothing on the signal its caller passes, answer after answer (an SSE stream\'s signal lives as long as the stream)', async () => {
    const stream = new AbortController();
    const session = await service.open(name);
    for (let i = 0; i < 50; i++) {
      const a = await session.next({ max: 10, maxBytes: 1_048_576, waitMs: 0, signal: stream.signal });
      expect(a.events).toEqual([]);
    }
    expect(dependants(stream.signal)).toBe(0);
  });
});

describe('the pull routes', () => {
  const closing = new AbortController();
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const app = express();
    app.use((req, _res, next) => {
      attachAccess(req, new Access(ANONYMOUS, silentLogger()));
      next();
    });
    app.use(pullRouter(() => service as PullApi, { closing: closing.signal, log: silentLogger() }));
    app.use(problemHandler({ retryAfterS: 1 }));
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    closing.abort();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('leave nothing on the gateway\'s closing signal once long-polls and streams are over', async () => {
    for (let i = 0; i < 40; i++) {
      const res = await fetch(`${url}/subscriptions/${name}/events?wait=0`);
      expect(res.status, await res.text()).toBe(200);
    }
    for (let i = 0; i < 5; i++) {
      const ac = new AbortController();
      const res = await fetch(`${url}/subscriptions/${name}/stream?heartbeat=1`, { signal: ac.signal });
      expect(res.status).toBe(200);
      ac.abort();
      await res.body?.cancel().catch(() => undefined);
    }
    // The server sees the streams' clients go (their rounds end) before it lets go of them.
    const deadline = Date.now() + 5_000;
    while (dependants(closing.signal) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(dependants(closing.signal)).toBe(0);
  });
});
