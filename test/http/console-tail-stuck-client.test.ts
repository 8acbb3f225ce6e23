/**
 * The console's live tail (`GET /console/api/tail/{name}`, server-sent events) wrote every record it
 * read into the response without looking at backpressure: a client that stopped reading without
 * closing (a hung browser or script; TCP keeps the connection alive) made the gateway buffer every
 * event of the subscription's kinds in memory for as long as the connection lived — unbounded
 * growth driven by the topics' traffic, by any partner with a subscription — and held the caller's
 * pull slot for ever. Now the tail waits for the socket to drain before it takes the next record
 * (the read is held, as a pull stream is), and an answer that makes no progress for the send-stall
 * bound is cut (connection closed, slot back), as the pull routes do.
 *
 * On the router alone, on the in-memory transport, with the bound set to 500 ms: a client on a raw
 * socket that sends its request and never reads, while 60,000 records arrive on the topic (~6.5 MB
 * of tail; before the fix all of it waited in the response's buffer).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PRICE_LOADING_COMPLETED } from '../../src/catalog/generated/index.js';
import { consoleRouter } from '../../src/http/console/router.js';
import { PullSlots } from '../../src/http/api/subscriptions/pull-slots.js';
import { problemHandler } from '../../src/http/api/errors.js';
import { ANONYMOUS, Access, attachAccess } from '../../src/http/auth/index.js';
import { silentLogger } from '../../src/observability/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { Transport } from '../../src/transport/index.js';
import { stuckClientServer } from '../helpers/raw-http.js';
import type { StuckClientServer } from '../helpers/raw-http.js';
import { codecFixture } from '../unit/bus/helpers.js';

const topic = PRICE_LOADING_COMPLETED.topic;
const slots = new PullSlots(4);
let transport: Transport;
let server: StuckClientServer;
/** The tail's response, as the server holds it. */
let tailRes: ServerResponse | undefined;

beforeAll(async () => {
  const f = await codecFixture();
  transport = createMemoryTransport();
  await transport.ensureTopics([{ name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
  const view = { name: 'tailed', kinds: [PRICE_LOADING_COMPLETED.eventId] };
  const app = express();
  app.use((req, res, next) => {
    attachAccess(req, new Access(ANONYMOUS, silentLogger()));
    if (req.path.startsWith('/console/api/tail/')) tailRes = res;
    next();
  });
  app.use(consoleRouter({ catalog: f.catalog, transport, codec: () => f.codec, subscriptions: () => ({ get: () => view }) as never, traceTimeoutMs: 5_000, log: silentLogger(), sendStallMs: 500 }, slots));
  app.use(problemHandler({ retryAfterS: 1 }));
  server = await stuckClientServer(app);
});
afterAll(async () => {
  await server?.close();
  await transport?.close();
});

describe('a live tail whose client stops reading', () => {
  it('buffers a bounded amount while the records keep coming, and is cut after the send-stall bound (its slot comes back)', async () => {
    await server.stuckClient('/console/api/tail/tailed'); // never reads
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(1), { timeout: 5_000, interval: 20 });
    const res = tailRes!;
    // Records that do not decode are shown too (valid: false, with the reason and the value's place):
    // 60,000 of them, ~110 bytes of tail each, beyond what the loopback's socket buffers hold.
    let mostWaiting = 0;
    for (let i = 0; i < 60; i++) {
      await transport.produce(topic, Array.from({ length: 1_000 }, () => ({ key: null, value: randomBytes(16), headers: [] })));
      mostWaiting = Math.max(mostWaiting, res.writableLength);
      await new Promise((r) => setImmediate(r));
    }
    mostWaiting = Math.max(mostWaiting, res.writableLength);
    // A record's item at a time above the socket's own buffer, not every record read.
    expect(mostWaiting).toBeLessThan(1_048_576);
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(0), { timeout: 15_000, interval: 50 });
    expect(res.destroyed).toBe(true);
  }, 60_000);
});

describe('HEAD on the console\'s reading routes (break report 2026-12-07)', () => {
  // express answers HEAD with the GET handler: a HEAD on the tail started a broker read and took the
  // caller's pull slot for an answer that never has a body, and one on the trace read every topic
  // for nothing. The pull routes answer HEAD 405 for this reason; so do these now.
  it.each(['/console/api/tail/tailed', '/console/api/trace/c-1'])('HEAD %s is 405 (Allow: GET), reads nothing and takes no slot', async (path) => {
    const before = slots.held(ANONYMOUS.id);
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { method: 'HEAD', signal: AbortSignal.timeout(5_000) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    expect(slots.held(ANONYMOUS.id)).toBe(before);
  });
});
