/**
 * A PATCH that restarts a push subscription's members (concurrency here; ordering and retry do
 * too) is a planned stop, not a failure: on the real stack with two gateway processes and a
 * stream of events, `/readyz` of both stays 200 through six such PATCHes, and every event is
 * delivered. Breaker report (push, F2): the members' consumer closing under a join or a fetch
 * rejected with "Client is closed", the gateway counted the subscription failed and answered
 * `503 {"subscriptions":false}` for 2–3 s after each PATCH (so any partner could take every
 * gateway out of its load balancer) and logged an error.
 * `KAFKA_CLIENT=kafkajs|platformatic npx vitest run <this file>` picks the gateways' client.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../../../bench/lib/gateway-process.js';
import { priceLoaded } from '../../fixtures/events.js';
import { acceptAll, startSink } from '../../helpers/sink.js';
import type { TestSink } from '../../helpers/sink.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { api, postBatch, startGatewayPair } from './gateway-pair.js';
import type { GatewayPair } from './gateway-pair.js';

let pair: GatewayPair;
let a: GatewayProcess;
let b: GatewayProcess;
let sink: TestSink;
let priceType = '';

beforeAll(async () => {
  pair = await startGatewayPair('it-patchrr');
  ({ a, b } = pair);
  priceType = pair.eventIds.get('PriceLoadingCompleted')!;
  sink = await startSink(acceptAll);
}, 200_000);

afterAll(async () => {
  await pair?.stop();
  await sink?.close();
});

const price = (k: number, seq: number): Record<string, unknown> => ({
  specversion: '1.0',
  id: randomUUID(),
  source: 'urn:partner:it-patch-ready',
  type: priceType,
  time: '2026-12-01T10:00:00.000Z',
  subject: 'stream',
  data: priceLoaded(`K${k}/USD`, 'H1', String(seq).padStart(8, '0')),
});

describe('PATCHes that restart a push subscription during a stream', () => {
  it('keep /readyz 200 on both gateways and deliver every event', async () => {
    const name = uniqueName('patchrr').replace(/\./g, '-');
    const created = await api(a, 'POST', '/subscriptions', { name, kinds: ['PriceLoadingCompleted'], concurrency: 8, delivery: { mode: 'push', url: sink.url } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const sent: string[] = [];
    let seq = 0;
    const batch = async (gw: GatewayProcess): Promise<void> => {
      const events = Array.from({ length: 20 }, (_, k) => price(k, ++seq));
      await postBatch(gw, events);
      sent.push(...events.map((e) => e.id as string));
    };
    await waitFor('the subscription delivering', async () => {
      await batch(a);
      return sink.deliveries().length > 0;
    }, 30_000, 300);

    let streaming = true;
    const notReady: string[] = [];
    const stream = (async () => {
      for (let i = 0; streaming; i++) {
        await batch(i % 2 === 0 ? a : b);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const poll = (async () => {
      while (streaming) {
        for (const gw of [a, b]) {
          const res = await fetch(`${gw.url}/readyz`);
          const text = await res.text();
          if (res.status !== 200) notReady.push(`${gw === a ? 'a' : 'b'} ${res.status} ${text}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      for (let i = 0; i < 6; i++) {
        await new Promise((r) => setTimeout(r, 2500));
        const patched = await api(i % 2 === 0 ? a : b, 'PATCH', `/subscriptions/${name}`, { concurrency: 3 + i });
        expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      }
      await new Promise((r) => setTimeout(r, 3000));
    } finally {
      streaming = false;
      await Promise.all([stream, poll]);
    }
    expect(notReady).toEqual([]);
    await waitFor(`all ${sent.length} events delivered`, () => {
      const got = new Set(sink.deliveries().map((r) => String(r.headers['ce-id'])));
      return sent.every((id) => got.has(id));
    }, 60_000, 500);
    expect((await api(a, 'DELETE', `/subscriptions/${name}`)).status).toBe(204);
  }, 180_000);
});
