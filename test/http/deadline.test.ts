/**
 * Ingress answers when the publisher cannot confirm: the real HTTP server, codec and publisher on a
 * Transport double whose produce waits until the test releases it (or fails on purpose).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RecordPublisher } from '../../src/bus/publisher/index.js';
import { GatewayError } from '../../src/core/errors.js';
import { retryPolicy } from '../../src/core/retry.js';
import { createApiApp } from '../../src/http/api/app.js';
import type { IngressDeps } from '../../src/http/ingress/handler.js';
import { createHttpServer } from '../../src/http/server.js';
import { silentLogger } from '../../src/observability/index.js';
import { PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { ScriptedTransport, codecFixture, gate } from '../unit/bus/helpers.js';
import { BATCH, post, readTopic } from './helpers.js';
import { openRaw } from '../helpers/raw-http.js';

const SERIES = 'd6b5e2f6-5144-43bb-a2ec-5317301b7208';
const seriesData = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__1', barsAppended: 1, seriesLength: 10, updateId: '8c3a5f7e-2f43-4a59-9a0e-0e0f3c8b1d11', completedAt: '2022-03-15T12:00:01.250Z' };

const servers: Server[] = [];
const publishers: RecordPublisher[] = [];
afterEach(async () => {
  await Promise.all(publishers.splice(0).map((p) => p.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

async function serve(opts: { queueCapacity?: number; maxAttempts?: number; starting?: boolean; ackTimeoutMs?: number } = {}) {
  const fx = await codecFixture();
  const transport = new ScriptedTransport();
  await transport.ensureTopics(fx.catalog.topics);
  const records = new RecordPublisher(
    transport,
    { queueCapacity: opts.queueCapacity ?? 100, maxBatch: 100, retry: retryPolicy({ maxAttempts: opts.maxAttempts ?? 2, initialDelayMs: 1, factor: 2, maxDelayMs: 5, jitter: 0 }) },
    silentLogger(),
  );
  publishers.push(records);
  const deps: IngressDeps = {
    codec: fx.codec,
    publisher: records,
    log: silentLogger(),
    options: { maxBodyBytes: 65_536, maxBatchEvents: 10, ackTimeoutMs: opts.ackTimeoutMs ?? 150, retryAfterS: 7, dataschemaBase: 'http://x/schemas/ids/' },
  };
  const server = createHttpServer({
    ingress: () => (opts.starting === true ? undefined : deps),
    api: createApiApp({ catalog: fx.catalog, registry: fx.registry, docs: {}, retryAfterS: 7 }),
    ready: () => Promise.resolve({ ready: true, checks: {} }),
    metrics: () => Promise.resolve({ contentType: 'text/plain', body: '' }),
    retryAfterS: 7,
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, transport, records };
}

describe('POST /events when the broker does not confirm', () => {
  it('503 with Retry-After and the event unconfirmed (not notStored) when a produce under way does not resolve within the deadline', async () => {
    const { url, transport } = await serve();
    const g = gate();
    transport.steps.push({ wait: g.promise });
    const ev = structuredPriceEvent();
    const t0 = performance.now();
    const a = await post(url, ev);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    expect(a.status).toBe(503);
    expect(a.headers.get('retry-after')).toBe('7');
    expect(a.headers.get('content-type')).toContain('application/problem+json');
    expect(a.body).toMatchObject({ code: 'CEG_DELIVERY_TIMEOUT', retriable: true, status: 503, stored: [], notStored: [], unconfirmed: [{ id: ev.id }] });
    expect(a.body.detail).toContain('150 ms');
    // The record may still land afterwards (indeterminate): the partner's retry is a duplicate by source+id.
    g.release();
    const landed = await new Promise<number>((resolve) => setTimeout(() => void readTopic(transport.inner, PRICE_TOPIC).then((r) => resolve(r.length)), 20));
    expect(landed).toBe(1);
  });

  it('a batch over two topics where one topic hangs: stored lists the confirmed event with its index, unconfirmed the other', async () => {
    // The other topic's produce must be confirmed before the deadline: 150 ms missed it on a loaded
    // machine (stored came back empty); the hanging call ends the request at the deadline anyway.
    const { url, transport } = await serve({ ackTimeoutMs: 1500 });
    const g = gate();
    transport.steps.push({ wait: g.promise }); // the first produce call (price topic) hangs
    const price = structuredPriceEvent();
    const series = structuredPriceEvent({ type: SERIES }, seriesData);
    const a = await post(url, [price, series], BATCH);
    g.release();
    expect(a.status).toBe(503);
    expect(a.body.code).toBe('CEG_DELIVERY_TIMEOUT');
    const stored = a.body.stored as Record<string, unknown>[];
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ index: 1, id: series.id, topic: 'trading.series-update-completed', partition: expect.any(Number) as number, offset: '0' });
    expect(a.body.notStored).toEqual([]);
    expect(a.body.unconfirmed).toEqual([{ index: 0, id: price.id }]);
  });

  it('503 with the broker’s own retriable error when the retry budget runs out', async () => {
    const { url, transport } = await serve({ maxAttempts: 2 });
    transport.alwaysFail.set(PRICE_TOPIC, new GatewayError('CEG_BROKER_UNAVAILABLE', 'broker down', { retriable: true }));
    const a = await post(url, structuredPriceEvent());
    expect(a.status).toBe(503);
    expect(a.headers.get('retry-after')).toBe('7');
    expect(a.body.code).toBe('CEG_BROKER_UNAVAILABLE');
    expect(a.body.detail).toBe('broker down');
    expect(transport.calls).toHaveLength(2);
  });

  it('a non-retriable broker refusal is answered with its own status (413 for a record too large)', async () => {
    const { url, transport } = await serve();
    transport.steps.push({ fail: new GatewayError('CEG_PAYLOAD_TOO_LARGE', 'record too large for the topic', { retriable: false }) });
    const a = await post(url, structuredPriceEvent());
    expect(a.status).toBe(413);
    expect(a.headers.get('retry-after')).toBeNull();
    expect(a.body).toMatchObject({ code: 'CEG_PAYLOAD_TOO_LARGE', retriable: false });
  });

  it('a full outbound queue is an immediate 503 CEG_QUEUE_FULL with Retry-After', async () => {
    // A deadline far beyond the test's timeout: a refusal that waited for it never comes in time.
    const { url, transport, records } = await serve({ queueCapacity: 1, ackTimeoutMs: 120_000 });
    const g = gate();
    transport.steps.push({ wait: g.promise });
    const first = post(url, structuredPriceEvent()); // in flight, holds the transport
    await new Promise((r) => setTimeout(r, 20));
    const second = post(url, structuredPriceEvent({}, priceLoaded('GBP/USD'))); // queued
    await new Promise((r) => setTimeout(r, 20));
    // Refused at once, not after the 120 s deadline: answered at all within the test's 30 s.
    const third = await post(url, structuredPriceEvent({}, priceLoaded('USD/JPY')));
    expect(third.status).toBe(503);
    expect(third.headers.get('retry-after')).toBe('7');
    expect(third.body).toMatchObject({ code: 'CEG_QUEUE_FULL', retriable: true });
    g.release();
    expect((await first).status).toBe(202);
    expect((await second).status).toBe(202);
    expect(records.stats()).toMatchObject({ enqueued: 2, published: 2, rejected: 1 });
  }, 30_000);

  it('while the gateway is starting: 503 CEG_BROKER_UNAVAILABLE with Retry-After', async () => {
    const { url } = await serve({ starting: true });
    const a = await post(url, structuredPriceEvent());
    expect(a.status).toBe(503);
    expect(a.headers.get('retry-after')).toBe('7');
    expect(a.body.code).toBe('CEG_BROKER_UNAVAILABLE');
  });

  it('the acknowledgement deadline is a deadline: it runs from the request’s arrival, not from the end of a slow body', async () => {
    /** The deadline, and when the body follows the head (just before it). Units: ms. */
    const ACK_MS = 3000;
    const BODY_AFTER_MS = 2500;
    const { url, transport } = await serve({ ackTimeoutMs: ACK_MS });
    const g = gate();
    transport.steps.push({ wait: g.promise });
    const body = JSON.stringify(structuredPriceEvent());
    const c = await openRaw(url);
    const t0 = performance.now();
    c.write(`POST /events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/cloudevents+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
    await new Promise((r) => setTimeout(r, BODY_AFTER_MS));
    c.write(body);
    const [answer] = await c.responses(1, 3 * ACK_MS);
    const tookMs = performance.now() - t0;
    c.destroy();
    g.release();
    expect(answer!.status).toBe(503);
    expect(tookMs).toBeGreaterThanOrEqual(ACK_MS - 50);
    // A deadline counted from the body's end answers at BODY_AFTER_MS + ACK_MS (5.5 s) at the
    // earliest: timers never fire early, so the bound just under it holds on any machine, and
    // leaves the right answer (3 s) 2.3 s for a loaded machine's late timers.
    expect(tookMs).toBeLessThan(BODY_AFTER_MS + ACK_MS - 200);
  }, 30_000);

  it('events still queued behind a hanging produce at the deadline are notStored (withdrawn, never sent), not unconfirmed', async () => {
    const { url, transport } = await serve({ ackTimeoutMs: 300 });
    const g = gate();
    transport.steps.push({ wait: g.promise });
    const first = post(url, structuredPriceEvent()); // its produce hangs
    await new Promise((r) => setTimeout(r, 50));
    const second = structuredPriceEvent({}, priceLoaded('GBP/USD'));
    const b = await post(url, second);
    expect(b.status).toBe(503);
    expect(b.body).toMatchObject({ code: 'CEG_DELIVERY_TIMEOUT', stored: [], notStored: [{ id: second.id }], unconfirmed: [] });
    expect((await first).body).toMatchObject({ unconfirmed: [expect.objectContaining({})] });
    g.release();
    await new Promise((r) => setTimeout(r, 50));
    const ids = (await readTopic(transport.inner, PRICE_TOPIC)).map((r) => Buffer.from(r.headers.find(([n]) => n === 'ce_id')![1]).toString());
    expect(ids).not.toContain(second.id);
  });
});
