/**
 * A pull client that stops reading without closing its connection (a hung consumer process: TCP
 * keeps the connection alive with a zero window, so no error ever comes). The gateway waited for
 * the socket to drain for ever: an SSE stream, or a long-poll whose answer did not fit the socket
 * buffers, held its partner's `PULL_MAX_CONCURRENT_PER_PARTNER` slot and an HTTP connection until
 * the process restarted — a pause or a delete of the subscription, which the docs say end a stream,
 * did not end it either (the stream sat in its write). Now an answer whose sending makes no
 * progress for the send-stall bound (`STREAM_SEND_STALL_MS`, like nginx's `send_timeout`) is cut:
 * the connection is closed and the slot comes back. Nothing is committed by a pull, so the client
 * gets the events again from its last cursor.
 *
 * On the router alone (the bound set to 300 ms) with a pull that always has a large event ready,
 * and a client on a raw socket that sends its request and never reads.
 */
import type { Socket } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pullRouter } from '../../src/http/api/subscriptions/pull-routes.js';
import type { PullApi } from '../../src/http/api/subscriptions/pull-routes.js';
import { PullSlots } from '../../src/http/api/subscriptions/pull-slots.js';
import { problemHandler } from '../../src/http/api/errors.js';
import { ANONYMOUS, Access, attachAccess } from '../../src/http/auth/index.js';
import { silentLogger } from '../../src/observability/index.js';
import { stuckClientServer } from '../helpers/raw-http.js';
import type { StuckClientServer } from '../helpers/raw-http.js';

/** One event's JSON text: 512 KiB, so a few fill any socket buffer of the loopback. */
const BIG = JSON.stringify({ specversion: '1.0', id: 'big', source: 'urn:test', type: 't', data: 'x'.repeat(512 * 1024) });

const slots = new PullSlots(4);
const api: PullApi = {
  open: () =>
    Promise.resolve({
      // Always something to send: a stream writes until the socket backs up.
      next: (o: { readonly max: number }) => Promise.resolve({ events: Array.from({ length: Math.min(o.max, 8) }, () => ({ json: {}, text: BIG, cursor: 'c1.x.y' })), cursor: 'c1.x.y' }),
    }),
  commit: () => Promise.resolve(),
};

let server: StuckClientServer;

beforeAll(async () => {
  const app = express();
  app.use((req, _res, next) => {
    attachAccess(req, new Access(ANONYMOUS, silentLogger()));
    next();
  });
  app.use(pullRouter(() => api, { slots, sendStallMs: 300, log: silentLogger() }));
  app.use(problemHandler({ retryAfterS: 1 }));
  server = await stuckClientServer(app);
});
afterAll(() => server.close());

/** Sends `GET path` and never reads the answer (the socket is paused before anything arrives). */
const stuckClient = (path: string): Promise<Socket> => server.stuckClient(path);

describe('a client that stops reading', () => {
  it('an SSE stream whose socket makes no progress is cut after the send-stall bound, and its slot comes back', async () => {
    await stuckClient('/subscriptions/s/stream?heartbeat=1');
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(1), { timeout: 5_000, interval: 20 });
    // Generous: the bound is 300 ms; before the fix the slot was held for ever.
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(0), { timeout: 15_000, interval: 50 });
  }, 30_000);

  it('a long-poll whose answer does not fit the socket buffers is cut the same way', async () => {
    await stuckClient('/subscriptions/s/events?max=1000');
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(1), { timeout: 5_000, interval: 20 });
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(0), { timeout: 15_000, interval: 50 });
  }, 30_000);

  // Guards the fix against cutting too much (a first version, watching only the buffered amount, cut this client).
  it('a client that reads, however slowly, is not cut', async () => {
    const base = slots.held(ANONYMOUS.id);
    const s = await stuckClient('/subscriptions/s/stream?heartbeat=1');
    let got = 0;
    s.on('data', (c: Buffer) => (got += c.length));
    // Reads a little every 100 ms (a slow link): the socket makes progress within every 300 ms.
    const timer = setInterval(() => {
      s.resume();
      setTimeout(() => s.pause(), 5);
    }, 100);
    try {
      await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(base + 1), { timeout: 5_000, interval: 20 });
      await new Promise((r) => setTimeout(r, 2_000));
      expect(slots.held(ANONYMOUS.id)).toBe(base + 1);
      expect(got).toBeGreaterThan(0);
    } finally {
      clearInterval(timer);
      s.destroy();
    }
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(base), { timeout: 5_000, interval: 20 });
  }, 30_000);
});
