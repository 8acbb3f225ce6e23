/**
 * Issue 15 "Logs": a broker outage of 30 s produces at most a handful of log lines — logged once
 * when it starts and once when it ends, not a stack trace per client retry. A broker of this
 * test's own (never the shared stack's) is paused with SIGSTOP for 30 s while a partner keeps
 * posting, a probe polls /readyz every second and a subscription's consumer runs; every line the
 * gateway writes at info level or above meanwhile is counted.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { KAFKA_CLIENTS, kafkaClientEnv } from '../helpers/kafka-client.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import { GatewayError } from '../../src/core/errors.js';
import { createLogger } from '../../src/observability/index.js';

const OUTAGE_MS = 30_000;
let broker: PrivateBroker;

beforeAll(async () => {
  broker = await startPrivateBroker('outage');
}, 120_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

// Both clients, one after the other, on the same broker (issue 14: the same log on each).
describe.each(KAFKA_CLIENTS)('a 30 s broker outage in the log (issue 15, client %s)', (client) => {
  const catalog = catalogWithOwnTopics(uniqueName(`outage-${client}`));
  const lines: { level: number; msg: string; atMs: number; [k: string]: unknown }[] = [];
  let gateway: Gateway;
  let url: string;

  beforeAll(async () => {
    const s = stackEnv();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push({ ...(JSON.parse(l) as { level: number; msg: string }), atMs: performance.now() });
        done();
      },
    });
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', KAFKA_BROKERS: broker.brokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, CATALOG_DIR: catalog.dir, INGRESS_ACK_TIMEOUT_MS: '2000', READINESS_TIMEOUT_MS: '1000', SUBSCRIPTIONS_TOPIC: uniqueName('outage-defs'), ...kafkaClientEnv(client) });
    gateway = createGateway(config, createLogger({ level: 'info', destination: sink }));
    const addr = await gateway.listen();
    url = `http://127.0.0.1:${addr.port}`;
    await gateway.ready;
    // A broker that just started may not lead the new topic's partition yet: retriable, so retried.
    const subscription = uniqueName('outage-sub');
    await waitFor('the subscription to start', () =>
      gateway.subscribe({ subscription, kinds: [PRICE_LOADING_COMPLETED], retry: retryPolicy({ maxAttempts: 3, initialDelayMs: 50, factor: 2, maxDelayMs: 500, jitter: 0 }), handler: () => Promise.resolve() }).then(
        () => true,
        (err: unknown) => {
          if (err instanceof GatewayError && err.retriable) return false;
          throw err;
        },
      ), 60_000, 500);
  }, 120_000);
  afterAll(async () => {
    broker?.signal('SIGCONT');
    await gateway?.close();
    catalog.cleanup();
  }, 60_000);

  it('is logged once when it starts and once when it ends: a handful of lines, no stack trace per retry', async () => {
    // Serving events before the outage (readiness also waits for the subscription definitions,
    // which a freshly started broker can be slow to give on a loaded machine).
    await waitFor('POST /events 202 before the outage', async () => {
      const r = await fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent({}, priceLoaded('EUR/USD', 'M1'))) });
      await r.arrayBuffer();
      return r.status === 202;
    }, 60_000, 200);
    await new Promise((r) => setTimeout(r, 2000)); // start-up lines settle
    let stop = false;
    const statuses: number[] = [];
    const partner = (async () => {
      for (let i = 0; !stop; i++) {
        const res = await fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent({}, priceLoaded('EUR/USD', 'M1', String(22031500 + (i % 90))))) });
        statuses.push(res.status);
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const probe = (async () => {
      while (!stop) {
        await fetch(`${url}/readyz`).then((r) => r.arrayBuffer(), () => undefined);
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    await new Promise((r) => setTimeout(r, 1000));
    const from = lines.length;
    const pausedAt = performance.now();
    broker.signal('SIGSTOP');
    await new Promise((r) => setTimeout(r, OUTAGE_MS));
    broker.signal('SIGCONT');
    await waitFor('the gateway to serve again (202)', async () => statuses.slice(-3).length === 3 && statuses.slice(-3).every((s) => s === 202), 60_000, 200);
    await new Promise((r) => setTimeout(r, 5000)); // lines that come late (consumer rejoin, refusal summaries)
    stop = true;
    await Promise.all([partner, probe]);
    const during = lines.slice(from);
    // For the record (issue note): what an operator sees.
    console.log(`${client}:\n` + during.map((l) => `${Math.round(l.atMs - pausedAt)} ms  level ${l.level}  ${l.msg}`).join('\n'));
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0); // the outage was real for the partner
    const start = during.filter((l) => /broker unreachable/.test(l.msg));
    expect(start).toHaveLength(1);
    expect(start[0]!.atMs - pausedAt).toBeLessThan(15_000); // noticed while it lasts, not after
    expect(during.filter((l) => l.level >= 50)).toEqual([]);
    expect(during.filter((l) => /broker reachable again/.test(l.msg))).toHaveLength(1);
    expect(during.filter((l) => typeof l.stack === 'string')).toEqual([]);
    expect(during.length).toBeLessThanOrEqual(6);
  }, 180_000);
});
