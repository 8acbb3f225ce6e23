/**
 * A client that stops reading an IDLE SSE stream (nothing new on the subscription, only
 * heartbeats). The send-stall cut (pull-stuck-client.test.ts) never fired for it: a heartbeat is
 * 13 bytes, and the kernel's buffers of a loopback connection take ~3.9 MB before the gateway's
 * own write backs up — days of heartbeats — so the stream held its partner's
 * `PULL_MAX_CONCURRENT_PER_PARTNER` slot for good. Node tells nothing of what the peer
 * acknowledged, so no TCP-level sign could tell it from a client that reads; now every stream ends
 * after its lifetime (`STREAM_MAX_LIFE_MS`, here 1.5 s), cleanly: a client that reads sees a
 * closing comment and reconnects with Last-Event-ID, one that stopped reading gives its slot back.
 *
 * On the router alone, the partner's cap at 1, with a pull that never has anything new and a
 * client on a raw 127.0.0.1 socket that sends its request and never reads.
 */
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pullRouter } from '../../src/http/api/subscriptions/pull-routes.js';
import type { PullApi } from '../../src/http/api/subscriptions/pull-routes.js';
import { PullSlots } from '../../src/http/api/subscriptions/pull-slots.js';
import { problemHandler } from '../../src/http/api/errors.js';
import { ANONYMOUS, Access, attachAccess } from '../../src/http/auth/index.js';
import { silentLogger } from '../../src/observability/index.js';
import { sleep } from '../../src/core/retry.js';
import { stuckClientServer } from '../helpers/raw-http.js';
import type { StuckClientServer } from '../helpers/raw-http.js';

const LIFE_MS = 1_500;
const slots = new PullSlots(1);
const api: PullApi = {
  open: () =>
    Promise.resolve({
      // Never anything new: waits out its `wait` (or its signal), as an idle subscription's pull does.
      next: async (o: { readonly waitMs: number; readonly signal?: AbortSignal }) => {
        await sleep(o.waitMs, o.signal).catch(() => undefined);
        return { events: [], cursor: 'c1.x.y' };
      },
    }),
  commit: () => Promise.resolve(),
};

let server: StuckClientServer;
let base: string;

beforeAll(async () => {
  const app = express();
  app.use((req, _res, next) => {
    attachAccess(req, new Access(ANONYMOUS, silentLogger()));
    next();
  });
  // The send-stall bound short too: it is not what frees the slot here (it cannot see this client).
  app.use(pullRouter(() => api, { slots, sendStallMs: 300, streamMaxLifeMs: LIFE_MS, log: silentLogger() }));
  app.use(problemHandler({ retryAfterS: 1 }));
  server = await stuckClientServer(app);
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.close());

/** Opens a stream as a reading client until one is let in (200), answering each 429 by trying again; gives up after `boundMs`. */
async function streamWhenLetIn(boundMs: number): Promise<Response | undefined> {
  const until = performance.now() + boundMs;
  while (performance.now() < until) {
    const res = await fetch(`${base}/subscriptions/s/stream?heartbeat=1`);
    if (res.status === 200) return res;
    expect(res.status).toBe(429);
    await res.body?.cancel();
    await sleep(200);
  }
  return undefined;
}

describe('a client that stops reading an idle stream', () => {
  it('loses the stream after its lifetime: the partner slot comes back and a new stream gets in (cap 1)', async () => {
    const stuck = await server.stuckClient('/subscriptions/s/stream?heartbeat=1');
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(1), { timeout: 5_000, interval: 20 });
    // The stuck stream holds the only slot: a second one is refused now.
    const refused = await fetch(`${base}/subscriptions/s/stream?heartbeat=1`);
    expect(refused.status).toBe(429);
    await refused.body?.cancel();
    // Generous liveness bound (the lifetime is 1.5 s); before the fix the slot was never given back.
    const next = await streamWhenLetIn(20_000);
    expect(next?.status).toBe(200);
    stuck.destroy();

    // The reading client's stream ends cleanly at its lifetime too, saying why, so it reconnects.
    let text = '';
    const reader = next!.body!.getReader();
    const dec = new TextDecoder();
    const readAll = async (): Promise<void> => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        text += dec.decode(value, { stream: true });
      }
    };
    await Promise.race([readAll(), sleep(20_000).then(() => reader.cancel())]);
    expect(text).toContain(': the stream ends after 1.5 s; reconnect with Last-Event-ID to go on\n\n');
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(0), { timeout: 5_000, interval: 20 });
  }, 60_000);
});
