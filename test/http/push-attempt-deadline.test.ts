/**
 * `retry.timeoutMs` is "one attempt's deadline: the connect, the answer's headers, and its whole
 * body" (docs/subscriptions.md). A sink that sent its headers just before the deadline and then
 * nothing more held the attempt (and its concurrency slot, and with `ordering: key` its key) for
 * about twice that: the body's deadline was checked only when a chunk arrived, and a body that
 * stopped altogether met only undici's `bodyTimeout`, a pause of `timeoutMs` counted from the
 * headers (up to three times with a slow connect). The dead letter then said "not complete within
 * 6000 ms" of an attempt that took ~12 s. Now one timer per sink ends the attempts past their
 * deadline, so an attempt ends within `timeoutMs` (and ~1.25 s of grace for undici's own timeouts,
 * which name the phase).
 *
 * On the in-memory gateway: `timeoutMs` 6000, one attempt, a sink that answers `200` headers after
 * 5.8 s and never ends the body. The bound asserted (9.5 s from the sink receiving the request to
 * the dead letter) is generous for the fixed code (~7.2 s) and below the old one (~12 s).
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { STRUCTURED, post } from './helpers.js';

const TIMEOUT_MS = 6_000;
let gw: TestGateway;
let sink: Server;
let receivedAt = 0;

beforeAll(async () => {
  sink = createServer((req, res) => {
    req.resume();
    receivedAt = Date.now();
    // Headers just in time, then a body that never comes to an end.
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('working on it');
    }, TIMEOUT_MS - 200);
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  gw = await startGateway({ stack: false, env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SUBSCRIPTION_IDLE_STOP_MS: '0' } });
  await gw.gateway.subscriptionsLoaded();
});
afterAll(async () => {
  await gw?.close();
  sink?.closeAllConnections();
  await new Promise<void>((r) => sink.close(() => r()));
});

describe('an attempt whose answer stalls after its headers', () => {
  it('ends at the attempt\'s deadline (timeoutMs), not a body timeout later', async () => {
    const port = (sink.address() as AddressInfo).port;
    const r = await fetch(`${gw.url}/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'stall', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'push', url: `http://127.0.0.1:${port}/hook`, handshake: false }, retry: { maxAttempts: 1, timeoutMs: TIMEOUT_MS } }),
    });
    expect(r.status, await r.text()).toBe(201);
    const ev = await post(gw.url, structuredPriceEvent(), STRUCTURED);
    expect(ev.status).toBe(202);
    let status: { deadLettered: number; lastError: { time: string; reason: string } | null } | undefined;
    const end = Date.now() + 35_000;
    while (Date.now() < end) {
      status = (await (await fetch(`${gw.url}/subscriptions/stall/status`)).json()) as typeof status;
      if (status!.deadLettered > 0) break;
      await new Promise((ok) => setTimeout(ok, 50));
    }
    expect(status?.deadLettered).toBe(1);
    expect(status?.lastError?.reason).toMatch(/sink answered 200, then its body was not complete within 6000 ms/);
    expect(Date.parse(status!.lastError!.time) - receivedAt).toBeLessThan(9_500);
  }, 45_000);
});
