/**
 * The console's live tail ends after its lifetime (`tailMaxLifeMs`; default 10 min, a pull
 * stream's). The send-stall cut (console-tail-stuck-client.test.ts) cannot see a client that
 * stopped reading an idle tail: the connection's buffers take its heartbeats for days, so before
 * this bound such a tail held the caller's slot and a broker read for as long as TCP kept the
 * connection. On the router alone, on the in-memory transport, with a 400 ms lifetime: a client
 * that reads gets an event, then the closing comment and a clean end, and the slot comes back.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Server } from 'node:http';
import { PRICE_LOADING_COMPLETED } from '../../src/catalog/generated/index.js';
import { consoleRouter } from '../../src/http/console/router.js';
import { PullSlots } from '../../src/http/api/subscriptions/pull-slots.js';
import { ANONYMOUS } from '../../src/http/auth/index.js';
import { silentLogger } from '../../src/observability/index.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { Transport } from '../../src/transport/index.js';
import { codecFixture } from '../unit/bus/helpers.js';
import { listenConsoleRouter } from '../helpers/console-router.js';

const topic = PRICE_LOADING_COMPLETED.topic;
const slots = new PullSlots(1);
let transport: Transport;
let server: Server;
let base: string;
let deps: Parameters<typeof consoleRouter>[0];

beforeAll(async () => {
  const f = await codecFixture();
  transport = createMemoryTransport();
  await transport.ensureTopics([{ name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
  const view = { name: 'tailed', kinds: [PRICE_LOADING_COMPLETED.eventId] };
  deps = { catalog: f.catalog, transport, codec: () => f.codec, subscriptions: () => ({ get: () => view }) as never, traceTimeoutMs: 5_000, log: silentLogger() };
  ({ server, base } = await listenConsoleRouter({ ...deps, tailMaxLifeMs: 400 }, slots));
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await transport?.close();
});

describe('a live tail past its lifetime', () => {
  it('ends cleanly with a closing comment after the events it read, and gives its slot back', async () => {
    const res = await fetch(`${base}/console/api/tail/tailed`, { headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    expect(slots.held(ANONYMOUS.id)).toBe(1);
    await transport.produce(topic, [{ key: null, value: Buffer.from('not avro'), headers: [] }]);
    // Read to the end: without the lifetime the answer never ends (the test's timeout).
    const text = await res.text();
    expect(text.startsWith(': tailing\n\n')).toBe(true);
    expect(text).toMatch(/^data: \{.*"valid":false/m);
    expect(text.endsWith(": this tail's lifetime (400 ms) is over: tail again\n\n")).toBe(true);
    await vi.waitFor(() => expect(slots.held(ANONYMOUS.id)).toBe(0), { timeout: 5_000, interval: 20 });
    // The slot is free again: the page's next tail is taken, not refused as over the cap.
    const again = await fetch(`${base}/console/api/tail/tailed`, { headers: { accept: 'text/event-stream' } });
    expect(again.status).toBe(200);
    await again.body?.cancel();
  }, 20_000);

  it('refuses a lifetime that is not a whole number of ms ≥ 1', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => consoleRouter({ ...deps, tailMaxLifeMs: bad })).toThrow(/tailMaxLifeMs/);
  });
});
